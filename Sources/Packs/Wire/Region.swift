/// A region as the API shows it in a pack (openapi's `Region`, normalised): a style or tile
/// templates, bounds or a GeoJSON geometry, and the zooms. Absent fields are omitted, as the
/// schema's three shapes have them; a stored definition that cannot be read shows as `{}`.
public struct Region: Sendable, Hashable, Codable {
    public var styleURL: String?
    public var tiles: [String]?
    public var subdomains: [String]?
    /// A PMTiles archive's URL (a tiles region read from the archive).
    public var pmtiles: String?
    /// `xyz` or `tms`.
    public var scheme: String?
    public var tileSize: Int?
    /// `[west, south, east, north]`.
    public var bounds: [Double]?
    public var geometry: JSONValue?
    public var minZoom: Double?
    /// nil: each source's own maxzoom.
    public var maxZoom: Double?
    public var pixelRatio: Double?
    public var includeIdeographs: Bool?
    /// `all` or `region` (style regions only): which glyph ranges are downloaded.
    public var glyphs: String?

    public init(styleURL: String? = nil, tiles: [String]? = nil, subdomains: [String]? = nil, scheme: String? = nil,
                tileSize: Int? = nil, bounds: [Double]? = nil, geometry: JSONValue? = nil, minZoom: Double? = nil,
                maxZoom: Double? = nil, pixelRatio: Double? = nil, includeIdeographs: Bool? = nil,
                glyphs: String? = nil, pmtiles: String? = nil) {
        self.pmtiles = pmtiles
        self.styleURL = styleURL
        self.tiles = tiles
        self.subdomains = subdomains
        self.scheme = scheme
        self.tileSize = tileSize
        self.bounds = bounds
        self.geometry = geometry
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.pixelRatio = pixelRatio
        self.includeIdeographs = includeIdeographs
        self.glyphs = glyphs
    }

    private enum CodingKeys: String, CodingKey {
        case tiles, subdomains, scheme, bounds, geometry, glyphs, pmtiles
        case styleURL = "style_url"
        case tileSize = "tile_size"
        case minZoom = "min_zoom"
        case maxZoom = "max_zoom"
        case pixelRatio = "pixel_ratio"
        case includeIdeographs = "include_ideographs"
    }
}
