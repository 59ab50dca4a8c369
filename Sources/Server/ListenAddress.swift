import CUV
import Glibc

/// Where the server listens: an IPv4 `host:port` or a bracketed IPv6 `[host]:port`, both numeric.
/// Host names are refused on purpose: resolving them would block the loop, and a listen address
/// that silently picks one of several resolved addresses surprises operators.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case badHost(String)
        case badPort(String)

        public var description: String {
            switch self {
            case .malformed(let text): "'\(text)' is not host:port or [ipv6]:port"
            case .badHost(let host): "'\(host)' is not a numeric IPv4 or IPv6 address"
            case .badPort(let port): "'\(port)' is not a port number 0...65535"
            }
        }
    }

    public let host: String
    public let port: Int
    public var isIPv6: Bool { host.contains(":") }

    public init(host: String, port: Int) throws(ParseError) {
        guard (0...65535).contains(port) else { throw .badPort(String(port)) }
        var storage = sockaddr_storage()
        guard Self.fill(&storage, host: host, port: port) else { throw .badHost(host) }
        self.host = host
        self.port = port
    }

    private init(validated host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `127.0.0.1:port`: always valid, so no error to handle.
    public static func loopback(port: UInt16) -> ListenAddress {
        ListenAddress(validated: "127.0.0.1", port: Int(port))
    }

    public init(parsing text: String) throws(ParseError) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw .malformed(text)
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { throw .malformed(text) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII), let port = Int(portText) else {
            throw .badPort(String(portText))
        }
        try self.init(host: String(host), port: port)
    }

    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The same host with another port (the one the kernel picked for port 0).
    func withPort(_ port: Int) -> ListenAddress {
        (try? ListenAddress(host: host, port: port)) ?? self
    }

    func sockaddr() -> sockaddr_storage {
        var storage = sockaddr_storage()
        _ = Self.fill(&storage, host: host, port: port)
        return storage
    }

    private static func fill(_ storage: inout sockaddr_storage, host: String, port: Int) -> Bool {
        withUnsafeMutableBytes(of: &storage) { raw in
            if host.contains(":") {
                return uv_ip6_addr(host, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)) == 0
            }
            // uv_ip4_addr accepts shorthand like "127.1"; insist on four dotted parts.
            guard host.split(separator: ".", omittingEmptySubsequences: false).count == 4 else { return false }
            return uv_ip4_addr(host, Int32(port), raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)) == 0
        }
    }
}
