/// Which addresses an upstream connection may reach. A map style is user input, and its URLs
/// must not turn packd into a proxy onto the operator's own network (SSRF), so every connect is
/// judged on the resolved address — DNS rebinding cannot dodge a check made at connect time.
public struct AddressPolicy: Sendable {
    /// Why an address is refused; also what a test can assert on.
    public enum Classification: String, Sendable {
        case global, loopback, privateNetwork = "private", linkLocal = "link_local", sharedCGNAT = "cgnat"
        case multicast, unspecified, reserved
    }

    /// Host names (lower-case, exact) whose connections are allowed whatever they resolve to.
    public var allowedHosts: Set<String>
    /// Address ranges allowed even though they are not global.
    public var allowedRanges: [AddressRange]

    public init(allowedHosts: Set<String> = [], allowedRanges: [AddressRange] = []) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
        self.allowedRanges = allowedRanges
    }

    /// Whether a connection to `address`, made for a URL naming `host`, may proceed.
    public func permits(_ address: IPAddress, host: String) -> Bool {
        if Self.classify(address) == .global { return true }
        if allowedHosts.contains(host.lowercased()) { return true }
        let judged = address.embeddedIPv4 ?? address
        return allowedRanges.contains { $0.contains(address) || $0.contains(judged) }
    }

    /// The class of an address; IPv4 carried in IPv6 is judged by its IPv4 address.
    public static func classify(_ address: IPAddress) -> Classification {
        if let inner = address.embeddedIPv4 { return classify(inner) }
        for (range, classification) in nonGlobal where range.contains(address) {
            return classification
        }
        return .global
    }

    private static let nonGlobalText: [(String, Classification)] = [
        ("0.0.0.0/8", .unspecified), ("10.0.0.0/8", .privateNetwork), ("100.64.0.0/10", .sharedCGNAT),
        ("127.0.0.0/8", .loopback), ("169.254.0.0/16", .linkLocal), ("172.16.0.0/12", .privateNetwork),
        ("192.0.0.0/24", .reserved), ("192.168.0.0/16", .privateNetwork), ("198.18.0.0/15", .reserved),
        ("224.0.0.0/4", .multicast), ("240.0.0.0/4", .reserved),
        ("::/128", .unspecified), ("::1/128", .loopback), ("::/96", .reserved), ("fc00::/7", .privateNetwork),
        ("fe80::/10", .linkLocal), ("fec0::/10", .reserved), ("ff00::/8", .multicast),
    ]
    private static let nonGlobal: [(AddressRange, Classification)] = nonGlobalText.compactMap { text, classification in
        AddressRange(text).map { ($0, classification) }
    }
}
