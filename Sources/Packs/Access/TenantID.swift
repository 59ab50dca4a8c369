/// Who owns a pack, a key, a webhook, a version: one customer of a packd deployment. A short
/// slug (`acme`, `fleet-eu-2`): 1 to 63 lower-case ASCII letters, digits and inner hyphens, so it
/// fits a URL path segment, a Prometheus label and a log line without escaping. A deployment
/// without tenants keeps everything in `default`.
public struct TenantID: Hashable, Comparable, Sendable, CustomStringConvertible, Codable {
    public static let maximumLength = 63
    public static let `default` = TenantID(validated: "default")

    public let rawValue: String

    /// Nil when `text` is not a tenant slug.
    public init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard (1...Self.maximumLength).contains(bytes.count), bytes.first != UInt8(ascii: "-"), bytes.last != UInt8(ascii: "-"),
              bytes.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") })
        else { return nil }
        rawValue = String(text)
    }

    private init(validated: String) {
        rawValue = validated
    }

    public var description: String { rawValue }

    public static func < (left: TenantID, right: TenantID) -> Bool { left.rawValue < right.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = TenantID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                "a tenant id is 1 to \(Self.maximumLength) lower-case letters, digits and inner hyphens"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
