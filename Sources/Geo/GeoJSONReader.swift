/// Validates untrusted GeoJSON into a `Geometry`, stopping at the first problem with a pointer
/// to it. Keeps one running vertex count across the whole document so collections cannot
/// multiply the limit.
struct GeoJSONReader {
    let limits: GeoJSONLimits
    private var vertices = 0

    init(limits: GeoJSONLimits) {
        self.limits = limits
    }

    mutating func geometry(_ object: Any, pointer: String, depth: Int) throws(GeoError) -> Geometry {
        guard depth <= limits.maxDepth else {
            throw GeoError(pointer: pointer, detail: "geometry nesting is deeper than \(limits.maxDepth)")
        }
        guard let dictionary = object as? [String: Any] else {
            throw GeoError(pointer: pointer, detail: "a geometry must be a JSON object")
        }
        guard let type = dictionary["type"] as? String else {
            throw GeoError(pointer: pointer + "/type", detail: "missing geometry type")
        }
        if type == "GeometryCollection" {
            let at = pointer + "/geometries"
            guard let members = dictionary["geometries"] as? [Any] else {
                throw GeoError(pointer: at, detail: "GeometryCollection needs a geometries array")
            }
            guard !members.isEmpty else { throw GeoError(pointer: at, detail: "empty GeometryCollection") }
            var geometries = [Geometry]()
            for (index, member) in members.enumerated() {
                geometries.append(try geometry(member, pointer: "\(at)/\(index)", depth: depth + 1))
            }
            return .geometryCollection(geometries)
        }
        let at = pointer + "/coordinates"
        guard let coordinates = dictionary["coordinates"] else {
            throw GeoError(pointer: at, detail: "\(type) needs coordinates")
        }
        switch type {
        case "Point":
            return .point(try position(coordinates, pointer: at))
        case "MultiPoint":
            return .multiPoint(try list(coordinates, pointer: at, minimum: 1, what: "MultiPoint") { r, v, p throws(GeoError) in
                try r.position(v, pointer: p)
            })
        case "LineString":
            return .lineString(try line(coordinates, pointer: at))
        case "MultiLineString":
            return .multiLineString(try list(coordinates, pointer: at, minimum: 1, what: "MultiLineString") { r, v, p throws(GeoError) in
                try r.line(v, pointer: p)
            })
        case "Polygon":
            return .polygon(try polygon(coordinates, pointer: at))
        case "MultiPolygon":
            return .multiPolygon(try list(coordinates, pointer: at, minimum: 1, what: "MultiPolygon") { r, v, p throws(GeoError) in
                try r.polygon(v, pointer: p)
            })
        default:
            throw GeoError(pointer: pointer + "/type", detail: "unsupported geometry type \"\(type)\"")
        }
    }

    private mutating func polygon(_ object: Any, pointer: String) throws(GeoError) -> [[LngLat]] {
        try list(object, pointer: pointer, minimum: 1, what: "Polygon") { r, v, p throws(GeoError) in
            try r.ring(v, pointer: p)
        }
    }

    private mutating func ring(_ object: Any, pointer: String) throws(GeoError) -> [LngLat] {
        let positions = try list(object, pointer: pointer, minimum: 4, what: "linear ring") { r, v, p throws(GeoError) in
            try r.position(v, pointer: p)
        }
        if let first = positions.first, let last = positions.last, first != last {
            throw GeoError(
                pointer: "\(pointer)/\(positions.count - 1)",
                detail: "ring is not closed: the last position must equal the first"
            )
        }
        return positions
    }

    private mutating func line(_ object: Any, pointer: String) throws(GeoError) -> [LngLat] {
        try list(object, pointer: pointer, minimum: 2, what: "LineString") { r, v, p throws(GeoError) in
            try r.position(v, pointer: p)
        }
    }

    private mutating func list<Element>(
        _ object: Any, pointer: String, minimum: Int, what: String,
        _ element: (inout GeoJSONReader, Any, String) throws(GeoError) -> Element
    ) throws(GeoError) -> [Element] {
        guard let array = object as? [Any] else {
            throw GeoError(pointer: pointer, detail: "\(what) coordinates must be an array")
        }
        guard array.count >= minimum else {
            let detail = array.isEmpty ? "empty \(what)" : "\(what) needs at least \(minimum) positions, got \(array.count)"
            throw GeoError(pointer: pointer, detail: detail)
        }
        var result = [Element]()
        result.reserveCapacity(min(array.count, limits.maxVertices))
        for (index, value) in array.enumerated() {
            result.append(try element(&self, value, "\(pointer)/\(index)"))
        }
        return result
    }

    private mutating func position(_ object: Any, pointer: String) throws(GeoError) -> LngLat {
        guard let array = object as? [Any], array.count >= 2, array.count <= 3 else {
            throw GeoError(pointer: pointer, detail: "a position must be [longitude, latitude] or [longitude, latitude, altitude]")
        }
        var values = [Double]()
        for (index, element) in array.enumerated() {
            guard let value = JSONNumber.double(element) else {
                throw GeoError(pointer: "\(pointer)/\(index)", detail: "must be a number")
            }
            guard value.isFinite else {
                throw GeoError(pointer: "\(pointer)/\(index)", detail: "must be finite, got \(value)")
            }
            values.append(value)
        }
        guard abs(values[0]) <= 180 else {
            throw GeoError(pointer: pointer + "/0", detail: "longitude \(values[0]) is outside -180…180")
        }
        guard abs(values[1]) <= 90 else {
            throw GeoError(pointer: pointer + "/1", detail: "latitude \(values[1]) is outside -90…90")
        }
        vertices += 1
        guard vertices <= limits.maxVertices else {
            throw GeoError(pointer: pointer, detail: "more than \(limits.maxVertices) positions")
        }
        return LngLat(longitude: values[0], latitude: values[1])
    }
}
