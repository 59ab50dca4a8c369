/// MapLibre's `Resource::Kind` numbers, as stored in the offline database's `resources.kind`.
public enum ResourceKind: Int, Hashable, Sendable, CaseIterable {
    case style = 1
    /// TileJSON documents, and GeoJSON `data` URLs (MapLibre requests both as `Resource::source`).
    case source = 2
    case tile = 3
    case glyphs = 4
    case spriteImage = 5
    case spriteJSON = 6
    case image = 7
}
