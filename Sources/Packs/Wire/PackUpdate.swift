/// The answer of `GET /v1/packs/{id}/updates?from=N`: what a device holding version `from`
/// downloads to reach version `to`. `url` (the versioned export), `size` and `sha256` are null
/// for `none`.
public struct PackUpdate: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable {
        /// The device is current.
        case none
        /// A `since=from` delta, smaller than the full artifact.
        case delta
        /// The whole current version: `from` is unknown or no longer kept, or no delta is smaller.
        case full
    }

    public let from: Int64
    public let to: Int64
    public let kind: Kind
    public let url: String?
    public let size: Int?
    public let sha256: String?

    public init(from: Int64, to: Int64, kind: Kind, url: String? = nil, size: Int? = nil, sha256: String? = nil) {
        self.from = from
        self.to = to
        self.kind = kind
        self.url = url
        self.size = size
        self.sha256 = sha256
    }

    enum CodingKeys: String, CodingKey {
        case from, to, kind, url, size, sha256
    }

    /// Every member present, null when absent: clients read one shape.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(from, forKey: .from)
        try container.encode(to, forKey: .to)
        try container.encode(kind, forKey: .kind)
        try container.encode(url, forKey: .url)
        try container.encode(size, forKey: .size)
        try container.encode(sha256, forKey: .sha256)
    }
}
