/// What a tile cover covers: a bounding box (closed-form counts) or a GeoJSON geometry (scanline).
public enum TileRegion: Hashable, Sendable {
    case bounds(LngLatBounds)
    case geometry(Geometry)
}
