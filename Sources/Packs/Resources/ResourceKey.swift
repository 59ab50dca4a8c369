/// A tile's identity in MapLibre's `tiles` table: the URL template (with `{z}/{x}/{y}` left in,
/// credentials removed), the pixel ratio and the tile coordinates.
public struct TileKey: Hashable, Sendable {
    public var urlTemplate: String
    public var pixelRatio: Int64
    public var z: Int64
    public var x: Int64
    public var y: Int64

    public init(urlTemplate: String, pixelRatio: Int64 = 1, z: Int64, x: Int64, y: Int64) {
        self.urlTemplate = urlTemplate
        self.pixelRatio = pixelRatio
        self.z = z
        self.x = x
        self.y = y
    }
}

/// What a stored row is keyed by: a tile, or any other resource by canonical URL and kind.
public enum ResourceKey: Hashable, Sendable {
    case resource(url: String, kind: ResourceKind)
    case tile(TileKey)

    public var isTile: Bool {
        if case .tile = self { return true }
        return false
    }
}

extension ResourceKey {
    /// The key's share of a row's ambient-cache size: the byte length of its URL or URL template
    /// (so a "no content" row still counts something).
    public var ambientKeySize: Int64 {
        switch self {
        case .tile(let tile): return Int64(tile.urlTemplate.utf8.count)
        case .resource(let url, _): return Int64(url.utf8.count)
        }
    }
}
