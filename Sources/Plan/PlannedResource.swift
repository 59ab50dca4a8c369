import Packs

/// Where a tile lives in MapLibre's `tiles` table: the template, not the expanded URL, is the key,
/// so a phone finds the tile whichever subdomain it was fetched from.
public struct TileAddress: Hashable, Sendable {
    public let urlTemplate: String
    /// 1, or 2 when the template has `{ratio}` and the region's pixel ratio is above 1.
    public let pixelRatio: Int
    public let z: Int
    public let x: Int
    /// XYZ row (the `tiles` table stores MapLibre's canonical y, never the TMS row).
    public let y: Int
}

/// One thing to download.
public struct PlannedResource: Hashable, Sendable {
    public let kind: ResourceKind
    public let url: String
    /// Set for tiles only.
    public let tile: TileAddress?

    public init(kind: ResourceKind, url: String, tile: TileAddress? = nil) {
        self.kind = kind
        self.url = url
        self.tile = tile
    }
}

/// The four sprite files MapLibre always stores for a sprite base URL, in its order
/// (1x image, 2x image, 1x JSON, 2x JSON): the suffix goes before any query string or fragment.
enum SpriteFiles {
    static func resources(base: String) -> [PlannedResource] {
        let split = base.firstIndex { $0 == "?" || $0 == "#" } ?? base.endIndex
        let path = base[..<split]
        let query = base[split...]
        return [
            PlannedResource(kind: .spriteImage, url: path + ".png" + query),
            PlannedResource(kind: .spriteImage, url: path + "@2x.png" + query),
            PlannedResource(kind: .spriteJSON, url: path + ".json" + query),
            PlannedResource(kind: .spriteJSON, url: path + "@2x.json" + query),
        ]
    }
}
