/// Writes Mapbox Vector Tiles (spec 2.1) for tests: layers of features with properties of every
/// value type and a geometry type. Keys and values are deduplicated per layer as real encoders do.
/// Geometry is a single MoveTo per point (lines and polygons get a minimal valid command list):
/// what tests read is properties and types, not shapes.
public struct VectorTileBuilder {
    public enum Value: Hashable {
        case string(String)
        case float(Float)
        case double(Double)
        case int(Int64)
        case uint(UInt64)
        case sint(Int64)
        case bool(Bool)
    }

    public enum GeometryType: UInt8 {
        case unknown = 0, point = 1, lineString = 2, polygon = 3
    }

    public struct Feature {
        public var id: UInt64?
        public var type: GeometryType
        public var properties: [(String, Value)]
        /// Vertices in tile coordinates (0…extent): one for a point, a line's path; nil: a
        /// placeholder shape of the type.
        public var vertices: [(x: Int64, y: Int64)]?

        public init(id: UInt64? = nil, type: GeometryType = .point, properties: [(String, Value)],
                    vertices: [(x: Int64, y: Int64)]? = nil) {
            self.id = id
            self.type = type
            self.properties = properties
            self.vertices = vertices
        }
    }

    private var layers: [(name: String, features: [Feature], extent: UInt32)] = []

    public init() {}

    public mutating func layer(_ name: String, extent: UInt32 = 4096, _ features: [Feature]) {
        layers.append((name, features, extent))
    }

    /// A layer of point features, one per property dictionary.
    public mutating func points(_ name: String, _ properties: [[(String, Value)]]) {
        layer(name, properties.map { Feature(properties: $0) })
    }

    public var bytes: [UInt8] {
        var tile: [UInt8] = []
        for layer in layers { Self.appendBytesField(3, Self.layerBytes(layer), to: &tile) }
        return tile
    }

    private static func layerBytes(_ layer: (name: String, features: [Feature], extent: UInt32)) -> [UInt8] {
        var keys: [String] = []
        var keyIndex: [String: Int] = [:]
        var values: [Value] = []
        var valueIndex: [Value: Int] = [:]
        var out: [UInt8] = []
        appendVarintField(15, 2, to: &out)
        appendBytesField(1, Array(layer.name.utf8), to: &out)
        for feature in layer.features {
            var tags: [UInt8] = []
            for (key, value) in feature.properties {
                let k = keyIndex[key] ?? { keys.append(key); keyIndex[key] = keys.count - 1; return keys.count - 1 }()
                let v = valueIndex[value] ?? { values.append(value); valueIndex[value] = values.count - 1; return values.count - 1 }()
                appendVarint(UInt64(k), to: &tags)
                appendVarint(UInt64(v), to: &tags)
            }
            var body: [UInt8] = []
            if let id = feature.id { appendVarintField(1, id, to: &body) }
            if !tags.isEmpty { appendBytesField(2, tags, to: &body) }
            appendVarintField(3, UInt64(feature.type.rawValue), to: &body)
            appendBytesField(4, feature.vertices.map(path) ?? geometry(feature.type), to: &body)
            appendBytesField(2, body, to: &out)
        }
        for key in keys { appendBytesField(3, Array(key.utf8), to: &out) }
        for value in values { appendBytesField(4, valueBytes(value), to: &out) }
        appendVarintField(5, UInt64(layer.extent), to: &out)
        return out
    }

    /// MoveTo the first vertex, LineTo the others (a point is one MoveTo).
    private static func path(_ vertices: [(x: Int64, y: Int64)]) -> [UInt8] {
        var out: [UInt8] = []
        var cursor: (x: Int64, y: Int64) = (0, 0)
        func delta(_ vertex: (x: Int64, y: Int64)) {
            let (dx, dy) = (vertex.x - cursor.x, vertex.y - cursor.y)
            appendVarint(UInt64(bitPattern: (dx << 1) ^ (dx >> 63)), to: &out)
            appendVarint(UInt64(bitPattern: (dy << 1) ^ (dy >> 63)), to: &out)
            cursor = vertex
        }
        guard let first = vertices.first else { return out }
        appendVarint(1 << 3 | 1, to: &out)
        delta(first)
        if vertices.count > 1 {
            appendVarint(UInt64(vertices.count - 1) << 3 | 2, to: &out)
            for vertex in vertices.dropFirst() { delta(vertex) }
        }
        return out
    }

    private static func geometry(_ type: GeometryType) -> [UInt8] {
        var out: [UInt8] = []
        func command(_ id: UInt64, _ count: UInt64) { appendVarint((count << 3) | id, to: &out) }
        func point(_ x: Int64, _ y: Int64) {
            appendVarint(UInt64(bitPattern: (x << 1) ^ (x >> 63)), to: &out)
            appendVarint(UInt64(bitPattern: (y << 1) ^ (y >> 63)), to: &out)
        }
        switch type {
        case .point, .unknown:
            command(1, 1); point(2048, 2048)
        case .lineString:
            command(1, 1); point(100, 100); command(2, 1); point(500, 500)
        case .polygon:
            command(1, 1); point(100, 100); command(2, 2); point(500, 0); point(0, 500); command(7, 1)
        }
        return out
    }

    private static func valueBytes(_ value: Value) -> [UInt8] {
        var out: [UInt8] = []
        switch value {
        case .string(let text): appendBytesField(1, Array(text.utf8), to: &out)
        case .float(let number):
            out.append(UInt8(2 << 3 | 5))
            withUnsafeBytes(of: number.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .double(let number):
            out.append(UInt8(3 << 3 | 1))
            withUnsafeBytes(of: number.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .int(let number): appendVarintField(4, UInt64(bitPattern: number), to: &out)
        case .uint(let number): appendVarintField(5, number, to: &out)
        case .sint(let number): appendVarintField(6, UInt64(bitPattern: (number << 1) ^ (number >> 63)), to: &out)
        case .bool(let flag): appendVarintField(7, flag ? 1 : 0, to: &out)
        }
        return out
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        out.append(UInt8(value))
    }

    static func appendVarintField(_ number: UInt64, _ value: UInt64, to out: inout [UInt8]) {
        appendVarint(number << 3, to: &out)
        appendVarint(value, to: &out)
    }

    static func appendBytesField(_ number: UInt64, _ bytes: [UInt8], to out: inout [UInt8]) {
        appendVarint(number << 3 | 2, to: &out)
        appendVarint(UInt64(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }
}
