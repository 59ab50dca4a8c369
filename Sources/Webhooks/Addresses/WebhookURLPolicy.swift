import CCurl
import Fetch
import Foundation
import Glibc

/// What a webhook URL may be, checked when an endpoint is created or changed: `http`/`https`,
/// a host, no credentials (they would show in every answer listing the endpoint), no fragment,
/// and — under the upstream address policy (`--allow-upstream-hosts`) — no loopback, private or
/// link-local address literal and no `localhost`. A host name is judged again at every attempt
/// on the address it resolves to then (`Fetch`'s connect check), so DNS rebinding gains nothing.
public struct WebhookURLPolicy: Sendable {
    public static let maximumLength = 2048

    public let addresses: AddressPolicy

    public init(addresses: AddressPolicy = AddressPolicy()) {
        self.addresses = addresses
    }

    /// What is wrong with `url`, each a sentence; empty when it may be used.
    public func problems(_ url: String) -> [String] {
        guard url.utf8.count <= Self.maximumLength else { return ["must be at most \(Self.maximumLength) bytes"] }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https" else {
            return ["must be an absolute http or https URL"]
        }
        guard let host = components.host, !host.isEmpty else { return ["must name a host"] }
        // What libcurl would refuse at every attempt (its URL parser, an IDN host it cannot convert)
        // is refused now; the same check as pack URLs (`packd_curl_url_check`).
        let curl = packd_curl_url_check(url)
        guard curl == CURLUE_OK else {
            return ["libcurl cannot use this URL (\(String(cString: curl_url_strerror(curl)).lowercased()))"]
        }
        var problems: [String] = []
        if components.user != nil || components.password != nil {
            problems.append("must not carry credentials (put a token in the path or query instead)")
        }
        if components.fragment != nil { problems.append("must not have a fragment") }
        if let refused = refusal(host: host) { problems.append(refused) }
        return problems
    }

    /// Why the host is refused before any lookup: an address literal the policy refuses, or a
    /// name that always means this machine.
    private func refusal(host: String) -> String? {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let name = bare.lowercased()
        let address: IPAddress?
        if name == "localhost" || name.hasSuffix(".localhost") {
            address = IPAddress("127.0.0.1")
        } else {
            address = IPAddress(bare) ?? Self.shorthandIPv4(bare)
        }
        guard let address, !addresses.permits(address, host: name) else { return nil }
        let kind = AddressPolicy.classify(address).rawValue.replacingOccurrences(of: "_", with: "-")
        return "the host \(host) is a \(kind) address: webhooks may not reach the network packd runs in "
            + "(--allow-upstream-hosts allows it)"
    }

    /// The IPv4 forms resolvers also accept (`2130706433`, `127.1`, `0x7f.1`), as `inet_aton` reads them.
    private static func shorthandIPv4(_ text: String) -> IPAddress? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "x") || $0 == UInt8(ascii: "X")
                                                     || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }),
              text.utf8.first.map({ $0 >= 0x30 && $0 <= 0x39 }) == true else { return nil }
        var address = in_addr()
        guard inet_aton(text, &address) != 0 else { return nil }
        return .v4(UInt32(bigEndian: address.s_addr))
    }
}
