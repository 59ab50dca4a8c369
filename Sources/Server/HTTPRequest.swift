/// One parsed request as a handler sees it.
///
/// `body` holds the whole body for ordinary routes. Routes registered with `.streamed` body
/// handling get an empty `body` and a `bodyStream` instead, and run as soon as the head is parsed.
public struct HTTPRequest: Sendable {
    public let method: HTTPMethod
    /// The request target exactly as sent (path and query, still percent-encoded).
    public let target: String
    /// The path part of the target, still percent-encoded.
    public let path: String
    /// The query part after `?`, without it, or `nil` if there was none.
    public let query: String?
    public let headers: HTTPHeaders
    public let version: HTTPVersion
    public var body: [UInt8]
    /// Path parameters of the matched route (`{id}` → `parameters["id"]`), percent-decoded.
    public var parameters: [String: String]
    /// Set for routes whose body is streamed to the handler chunk by chunk.
    public internal(set) var bodyStream: RequestBodyStream?
    /// For an `OPTIONS` request: the methods the target resource supports (its `Allow`), set by
    /// the server from its routes.
    public internal(set) var allowedMethods: [HTTPMethod] = []
    /// The `X-Request-Id` the response carries (the client's if acceptable, else the server's).
    public internal(set) var requestID = ""

    public init(
        method: HTTPMethod, target: String, headers: HTTPHeaders = HTTPHeaders(),
        version: HTTPVersion = .http1_1, body: [UInt8] = []
    ) {
        self.method = method
        self.target = target
        // A UTF-8 search: Character-based `firstIndex(of:)` was a visible share of a request's cost.
        if let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            path = String(target[..<mark])
            query = String(target[target.utf8.index(after: mark)...])
        } else {
            path = target
            query = nil
        }
        self.headers = headers
        self.version = version
        self.body = body
        parameters = [:]
        bodyStream = nil
    }

    /// The query's `name=value` pairs, percent-decoded (`+` as space), in order. Pairs that do not
    /// decode are dropped rather than guessed at.
    public var queryItems: [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentDecoding.decode(parts[0], plusAsSpace: true) else { return nil }
            let raw = parts.count > 1 ? parts[1] : ""
            guard let value = PercentDecoding.decode(raw, plusAsSpace: true) else { return nil }
            return (name: name, value: value)
        }
    }

    /// The first value of query parameter `name`.
    public func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }
}

/// The protocol version of a request; only 1.0 and 1.1 reach handlers.
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    public let major: Int
    public let minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    public var description: String { "HTTP/\(major).\(minor)" }
}

/// RFC 3986 percent-decoding that refuses malformed escapes and invalid UTF-8 instead of passing
/// them through, so a handler never sees a half-decoded path parameter.
enum PercentDecoding {
    static func decode<S: StringProtocol>(_ text: S, plusAsSpace: Bool = false) -> String? {
        let utf8 = text.utf8
        if !utf8.contains(UInt8(ascii: "%")) && !(plusAsSpace && utf8.contains(UInt8(ascii: "+"))) {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusAsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
