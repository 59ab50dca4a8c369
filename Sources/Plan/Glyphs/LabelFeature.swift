import Packs

/// What style expressions read of one feature: its properties, id and geometry type. Vector tile
/// features (Jobs reads them from stored tiles) and GeoJSON features both offer it.
public protocol LabelFeature {
    /// The property's value; nil when the feature does not have it.
    func property(_ key: String) -> JSONValue?
    /// Every property (for `["properties"]` and keys only known at run time).
    var properties: [String: JSONValue] { get }
    var id: JSONValue? { get }
    /// `Point`, `LineString` or `Polygon` (the legacy `$type`), nil when unknown.
    var baseGeometryType: String? { get }
    /// Whether the geometry may be a multi-geometry (`geometry-type` then says `Multi…`); true
    /// when it cannot be told (vector tiles do not say without decoding the geometry).
    var mayBeMulti: Bool { get }
}

/// A feature as a dictionary: GeoJSON features, and tests.
public struct PropertiesFeature: LabelFeature {
    public let properties: [String: JSONValue]
    public let id: JSONValue?
    public let baseGeometryType: String?
    public let mayBeMulti: Bool

    public init(properties: [String: JSONValue], id: JSONValue? = nil, baseGeometryType: String? = "Point",
                mayBeMulti: Bool = false) {
        self.properties = properties
        self.id = id
        self.baseGeometryType = baseGeometryType
        self.mayBeMulti = mayBeMulti
    }

    public func property(_ key: String) -> JSONValue? { properties[key] }
}
