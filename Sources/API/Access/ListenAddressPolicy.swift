import Glibc
import Server

/// The rule that keeps a server without API keys off the network: it may listen on loopback only.
public enum ListenAddressPolicy {
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Throws when `address` is not loopback and no keys are configured. The CLI calls it before
    /// binding.
    public static func check(_ address: ListenAddress, authenticator: APIKeyAuthenticator) throws(Refusal) {
        guard !authenticator.isEnabled, !isLoopback(address.host) else { return }
        throw Refusal(description: "refusing to listen on \(address) without API keys: configure PACKD_API_KEYS or a key file, or listen on 127.0.0.1 or ::1")
    }

    /// 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 (a literal address; names are not resolved).
    public static func isLoopback(_ host: String) -> Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return host == "localhost" }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }
        return bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
    }
}
