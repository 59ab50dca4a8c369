/// The body of `POST /v1/estimates` (openapi's `Estimate`): tile counts per source and zoom, the
/// other resources by kind, and a byte estimate from stored tiles of the same sources. The API
/// encodes it, the CLI decodes it: there is no other description of this JSON in Swift.
public struct Estimate: Sendable, Equatable, Codable {
    /// One tile source the region downloads (openapi's `SourceEstimate`).
    public struct Source: Sendable, Equatable, Codable {
        /// The source's id in the style, or `tiles` for a tiles region.
        public var source: String
        /// `vector`, `raster`, `raster-dem`, or `tiles` for a tiles region.
        public var type: String
        public var tileSize: Int
        public var minZoom: Int
        public var maxZoom: Int
        public var tiles: Int64
        public var zooms: [Zoom]

        public init(source: String, type: String, tileSize: Int, minZoom: Int, maxZoom: Int, tiles: Int64, zooms: [Zoom]) {
            self.source = source
            self.type = type
            self.tileSize = tileSize
            self.minZoom = minZoom
            self.maxZoom = maxZoom
            self.tiles = tiles
            self.zooms = zooms
        }

        private enum CodingKeys: String, CodingKey {
            case source, type, tiles, zooms
            case tileSize = "tile_size"
            case minZoom = "min_zoom"
            case maxZoom = "max_zoom"
        }
    }

    /// One zoom of a source; `exact` is false for a geometry's deep zoom, extrapolated.
    public struct Zoom: Sendable, Equatable, Codable {
        public var zoom: Int
        public var tiles: Int64
        public var exact: Bool

        public init(zoom: Int, tiles: Int64, exact: Bool) {
            self.zoom = zoom
            self.tiles = tiles
            self.exact = exact
        }
    }

    /// Resources other than tiles (openapi's `ResourceCounts`).
    public struct Resources: Sendable, Equatable, Codable {
        public var styles: Int64
        public var tilejsons: Int64
        public var sprites: Int64
        public var glyphs: Int64
        /// GeoJSON `data` and image-source URLs.
        public var data: Int64

        public init(styles: Int64 = 0, tilejsons: Int64 = 0, sprites: Int64 = 0, glyphs: Int64 = 0, data: Int64 = 0) {
            self.styles = styles
            self.tilejsons = tilejsons
            self.sprites = sprites
            self.glyphs = glyphs
            self.data = data
        }
    }

    public var sources: [Source]
    /// Tiles over all sources and zooms.
    public var tiles: Int64
    /// False when some zoom's count is extrapolated.
    public var exact: Bool
    public var resources: Resources
    /// What the pack's `progress.expected_resources` would be.
    public var expectedResources: Int64
    /// nil when no tile of any of the sources is stored yet.
    public var estimatedBytes: Int64?
    /// Stored tiles the byte estimate averages over (0 when `estimatedBytes` is nil).
    public var sampledTiles: Int64
    /// The most tiles the pack could hold; nil when unlimited.
    public var tileLimit: Int64?
    public var withinTileLimit: Bool

    public init(sources: [Source], tiles: Int64, exact: Bool, resources: Resources, expectedResources: Int64,
                estimatedBytes: Int64?, sampledTiles: Int64, tileLimit: Int64?, withinTileLimit: Bool) {
        self.sources = sources
        self.tiles = tiles
        self.exact = exact
        self.resources = resources
        self.expectedResources = expectedResources
        self.estimatedBytes = estimatedBytes
        self.sampledTiles = sampledTiles
        self.tileLimit = tileLimit
        self.withinTileLimit = withinTileLimit
    }

    private enum CodingKeys: String, CodingKey {
        case sources, tiles, exact, resources
        case expectedResources = "expected_resources"
        case estimatedBytes = "estimated_bytes"
        case sampledTiles = "sampled_tiles"
        case tileLimit = "tile_limit"
        case withinTileLimit = "within_tile_limit"
    }

    /// Every field is written, `null` included: the schema requires them all.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sources, forKey: .sources)
        try container.encode(tiles, forKey: .tiles)
        try container.encode(exact, forKey: .exact)
        try container.encode(resources, forKey: .resources)
        try container.encode(expectedResources, forKey: .expectedResources)
        try container.encode(estimatedBytes, forKey: .estimatedBytes)
        try container.encode(sampledTiles, forKey: .sampledTiles)
        try container.encode(tileLimit, forKey: .tileLimit)
        try container.encode(withinTileLimit, forKey: .withinTileLimit)
    }
}
