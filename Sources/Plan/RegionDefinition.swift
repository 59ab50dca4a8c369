import Geo
import Packs

/// A validated, normalised region: what to download (a style, or a bare tile template), where
/// (bounds or geometry), and at which zooms. Decoded from the API's three region shapes,
/// written back as the API's JSON and as MapLibre's offline region definition.
public struct RegionDefinition: Hashable, Sendable {
    /// A region with a bare tile template: `{"tiles": […], "subdomains", "scheme", "tile_size"}`.
    public struct TemplateSource: Hashable, Sendable {
        /// All templates as given; the first is downloaded (MapLibre keys tiles by one template).
        public let templates: [String]
        public let subdomains: [String]
        public let scheme: TileURLTemplate.Scheme
        /// Pixels; stored and reported, but the zooms of a template region are tile zooms as given.
        public let tileSize: Int
        public let template: TileURLTemplate
    }

    public enum Content: Hashable, Sendable {
        case style(url: String)
        case tiles(TemplateSource)
        /// A PMTiles archive's tiles (`{"pmtiles": url}`): read with range requests.
        case archive(url: String)
    }

    /// Which glyph ranges a style region downloads: every range of every font stack (`all`,
    /// MapLibre's behaviour), or only those the region's labels can need (`region`), decided
    /// from the stored tiles and GeoJSON once they are downloaded.
    public enum Glyphs: String, Hashable, Sendable, CaseIterable {
        case all, region
    }

    /// The highest zoom a region may ask for.
    public static let maxZoomLimit = 30.0

    public let content: Content
    public let area: TileRegion
    public let minZoom: Double
    /// `nil`: each source's own maxzoom (MapLibre stores no `max_zoom`, meaning infinity).
    public let maxZoom: Double?
    public let pixelRatio: Double
    public let includeIdeographs: Bool
    public let glyphs: Glyphs

    public init(
        content: Content, area: TileRegion, minZoom: Double = 0, maxZoom: Double?, pixelRatio: Double = 1,
        includeIdeographs: Bool = true, glyphs: Glyphs = .all
    ) {
        self.content = content
        self.area = area
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.pixelRatio = pixelRatio
        self.includeIdeographs = includeIdeographs
        self.glyphs = glyphs
    }

    /// Decodes and validates an API region object (from `JSONSerialization`); unknown fields are
    /// rejected. Every problem found is reported, with a pointer relative to the region.
    /// `geometryLimits` bounds vertex count and nesting of a `geometry`.
    public init(json: Any, geometryLimits: GeoJSONLimits = .init()) throws(RegionError) {
        self = try RegionDecoder.decode(json, format: .api, geometryLimits: geometryLimits)
    }

    /// Decodes MapLibre's offline region definition (`bounds` as `[south, west, north, east]`),
    /// e.g. from an imported database; template regions written by `mapLibreJSON` decode too.
    public init(mapLibreJSON json: Any, geometryLimits: GeoJSONLimits = .init()) throws(RegionError) {
        self = try RegionDecoder.decode(json, format: .mapLibre, geometryLimits: geometryLimits)
    }

    public var styleURL: String? {
        if case .style(let url) = content { return url }
        return nil
    }

    /// Whether the plan needs documents fetched first (a style, an archive's header).
    public var needsDocuments: Bool {
        if case .tiles = content { return false }
        return true
    }

    /// The normalised API form (what `GET /v1/packs/{id}` shows as `region`).
    public var region: Region {
        var region = Region(minZoom: minZoom, maxZoom: maxZoom, pixelRatio: pixelRatio)
        switch content {
        case .style(let url):
            region.styleURL = url
            region.includeIdeographs = includeIdeographs
            region.glyphs = glyphs.rawValue
        case .tiles(let source):
            region.tiles = source.templates
            region.scheme = source.scheme.rawValue
            region.tileSize = source.tileSize
            region.subdomains = source.subdomains.isEmpty ? nil : source.subdomains
        case .archive(let url):
            region.pmtiles = url
        }
        switch area {
        case .bounds(let bounds): region.bounds = [bounds.west, bounds.south, bounds.east, bounds.north]
        case .geometry(let geometry): region.geometry = JSONValue(foundationObject: geometry.geoJSONObject)
        }
        return region
    }

    /// MapLibre's region definition as JSON text: keys in MapLibre's order and every number
    /// written as a double (`0.0`, not `0`), because MapLibre's decoder insists on
    /// `IsDouble()` for `min_zoom`, `max_zoom`, `pixel_ratio` and `bounds`.
    public var mapLibreJSON: String {
        var fields: [(String, Any)] = []
        switch content {
        case .style(let url): fields.append(("style_url", url))
        case .tiles(let source): fields += Self.templateFields(source).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        case .archive(let url): fields.append(("pmtiles", url))
        }
        fields.append(("min_zoom", minZoom))
        if let maxZoom { fields.append(("max_zoom", maxZoom)) }
        fields.append(("pixel_ratio", pixelRatio))
        fields.append(("include_ideographs", includeIdeographs))
        // Only when not MapLibre's own behaviour: the definitions of `all` packs stay as they were.
        if glyphs != .all { fields.append(("glyphs", glyphs.rawValue)) }
        switch area {
        case .bounds(let bounds): fields.append(("bounds", [bounds.south, bounds.west, bounds.north, bounds.east]))
        case .geometry(let geometry): fields.append(("geometry", geometry.geoJSONObject))
        }
        return DoubleJSONWriter.write(fields)
    }

    private static func templateFields(_ source: TemplateSource) -> [String: Any] {
        var object: [String: Any] = [
            "tiles": source.templates, "scheme": source.scheme.rawValue, "tile_size": source.tileSize,
        ]
        if !source.subdomains.isEmpty { object["subdomains"] = source.subdomains }
        return object
    }
}
