/// A validated GeoJSON geometry (RFC 7946). Values only exist after validation by the reader:
/// rings are closed with at least 4 positions, lines have at least 2, nothing is empty and every
/// coordinate is finite and in range, so covers never have to second-guess their input.
public indirect enum Geometry: Hashable, Sendable {
    case point(LngLat)
    case multiPoint([LngLat])
    case lineString([LngLat])
    case multiLineString([[LngLat]])
    /// Rings: the first is the exterior, the rest are holes.
    case polygon([[LngLat]])
    case multiPolygon([[[LngLat]]])
    case geometryCollection([Geometry])

    /// Reads a geometry from a JSONSerialization value. Errors carry a JSON pointer prefixed by
    /// `pointer`, the location of the geometry in the enclosing document.
    public init(geoJSON object: Any, pointer: String = "", limits: GeoJSONLimits = .init()) throws(GeoError) {
        var reader = GeoJSONReader(limits: limits)
        self = try reader.geometry(object, pointer: pointer, depth: 1)
    }

    /// The GeoJSON object, ready for JSONSerialization; reading it back gives an equal value.
    public var geoJSONObject: Any {
        func position(_ p: LngLat) -> [Double] { [p.longitude, p.latitude] }
        switch self {
        case .point(let p):
            return ["type": "Point", "coordinates": position(p)] as [String: Any]
        case .multiPoint(let ps):
            return ["type": "MultiPoint", "coordinates": ps.map(position)] as [String: Any]
        case .lineString(let ps):
            return ["type": "LineString", "coordinates": ps.map(position)] as [String: Any]
        case .multiLineString(let lines):
            return ["type": "MultiLineString", "coordinates": lines.map { $0.map(position) }] as [String: Any]
        case .polygon(let rings):
            return ["type": "Polygon", "coordinates": rings.map { $0.map(position) }] as [String: Any]
        case .multiPolygon(let polygons):
            return ["type": "MultiPolygon", "coordinates": polygons.map { $0.map { $0.map(position) } }] as [String: Any]
        case .geometryCollection(let members):
            return ["type": "GeometryCollection", "geometries": members.map(\.geoJSONObject)] as [String: Any]
        }
    }

    /// The smallest box holding every position (never antimeridian-crossing: a geometry's edges
    /// run the short way in longitude degrees only if the user split them, as RFC 7946 asks).
    public var bounds: LngLatBounds? {
        var west = Double.infinity, south = Double.infinity
        var east = -Double.infinity, north = -Double.infinity
        forEachPosition { p in
            west = min(west, p.longitude)
            east = max(east, p.longitude)
            south = min(south, p.latitude)
            north = max(north, p.latitude)
        }
        guard west <= east, south <= north else { return nil }
        return LngLatBounds(uncheckedWest: west, south: south, east: east, north: north)
    }

    /// Every position, collection members included.
    func forEachPosition(_ body: (LngLat) -> Void) {
        switch self {
        case .point(let p): body(p)
        case .multiPoint(let ps), .lineString(let ps): ps.forEach(body)
        case .multiLineString(let lines), .polygon(let lines): lines.forEach { $0.forEach(body) }
        case .multiPolygon(let polygons): polygons.forEach { $0.forEach { $0.forEach(body) } }
        case .geometryCollection(let members): members.forEach { $0.forEachPosition(body) }
        }
    }
}
