import Packs

/// What an archive export wrote, for the API's log line and the tests.
public struct ArchiveExportSummary: Sendable {
    public let source: PackTileSource
    public let format: TileFormat
    public let extent: TileSetExtent
    /// Tiles written (every stored tile with content; dedup may store fewer bodies).
    public let tileCount: Int
    /// Vector layer ids found in the tiles (empty for images).
    public let vectorLayers: [String]
    public let unreadableVectorTiles: Int
}
