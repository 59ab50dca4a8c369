/// A decoded Mapbox Vector Tile (spec 2.1): its layers, each layer's features with their
/// properties (keys and values of every type) and geometry type — what style expressions read.
/// Geometry itself is skipped by length, never decoded. Tiles are untrusted: a malformed tile is a
/// `ProtobufFailure`, never a trap, and what a tile may hold is bounded (`Limits`), so a small tile
/// cannot make the decoder allocate without end.
public struct VectorTile: Sendable {
    /// The `GeomType` of a feature.
    public enum GeometryType: UInt8, Sendable {
        case unknown = 0, point = 1, lineString = 2, polygon = 3

        /// The name filters compare `$type` / `geometry-type` with (nil for `unknown`).
        public var name: String? {
            switch self {
            case .unknown: nil
            case .point: "Point"
            case .lineString: "LineString"
            case .polygon: "Polygon"
            }
        }
    }

    /// A property value: the seven `Value` fields of the spec, numbers kept as they were sent.
    public enum Value: Sendable, Equatable {
        case string(String)
        case double(Double)
        case int(Int64)
        case uint(UInt64)
        case bool(Bool)
        /// A `Value` message with no field set: what readers give as null.
        case null

        /// The number a style expression sees (`int`, `uint`, `float`, `double` and `sint` alike).
        public var number: Double? {
            switch self {
            case .double(let value): value
            case .int(let value): Double(value)
            case .uint(let value): Double(value)
            case .string, .bool, .null: nil
            }
        }
    }

    /// How much one tile may hold. A real tile of the densest zoom holds a few dozen layers, tens of
    /// thousands of features and keys; the defaults are an order of magnitude above that.
    public struct Limits: Sendable {
        public var maximumLayers = 1_000
        public var maximumFeaturesPerLayer = 1_000_000
        public var maximumKeysPerLayer = 100_000
        public var maximumValuesPerLayer = 1_000_000
        /// Tags (key/value index pairs) of all features of a layer together.
        public var maximumTagsPerLayer = 4_000_000

        public init() {}
    }

    public struct Feature: Sendable, Equatable {
        public var id: UInt64?
        public var type: GeometryType
        /// Where this feature's tag pairs start in the layer's `tags`, and how many pairs.
        let tagStart: Int
        public let tagCount: Int
    }

    public struct Layer: Sendable {
        public let name: String
        public let extent: UInt32
        public let keys: [String]
        public let values: [Value]
        public let features: [Feature]
        /// Key and value indices of every feature's tags, pair by pair, checked in range.
        let tags: [UInt32]

        /// The index of `key` in `keys`, for lookups of one property over many features.
        public func keyIndex(_ key: String) -> Int? {
            keys.firstIndex(of: key)
        }

        /// The value of the key at `keyIndex` on `feature` (nil: the feature does not have it).
        public func value(keyIndex: Int, of feature: Feature) -> Value? {
            valueIndex(keyIndex: keyIndex, of: feature).map { values[$0] }
        }

        /// The index in `values` of the key at `keyIndex` on `feature`: features sharing a value share
        /// its index, so per-value work can be done once per layer.
        public func valueIndex(keyIndex: Int, of feature: Feature) -> Int? {
            var position = feature.tagStart
            let end = position + feature.tagCount * 2
            let key = UInt32(keyIndex)
            // The last tag of a repeated key wins, as every reader that builds a dictionary does.
            var found: Int?
            while position < end {
                if tags[position] == key { found = Int(tags[position + 1]) }
                position += 2
            }
            return found
        }

        /// Every (key, value) of `feature`, in tag order.
        public func properties(of feature: Feature) -> [(key: String, value: Value)] {
            stride(from: feature.tagStart, to: feature.tagStart + feature.tagCount * 2, by: 2).map {
                (keys[Int(tags[$0])], values[Int(tags[$0 + 1])])
            }
        }
    }

    public let layers: [Layer]

    /// Decodes the layers of an uncompressed tile for which `wanted(name)` is true (others are
    /// skipped after their name); features keep properties and geometry type only.
    public init(decoding bytes: UnsafeRawBufferPointer, limits: Limits = .init(),
                wanted: (String) -> Bool = { _ in true }) throws(ProtobufFailure) {
        var reader = ProtobufReader(bytes)
        var layers: [Layer] = []
        var seen = 0
        while let field = try reader.nextField() {
            guard field.number == 3, case .bytes(let layer) = field.value else { continue }
            seen += 1
            guard seen <= limits.maximumLayers else { throw .malformed("more than \(limits.maximumLayers) layers") }
            if let decoded = try Self.layer(layer, limits: limits, wanted: wanted) { layers.append(decoded) }
        }
        self.layers = layers
    }

    /// `decoding:` over an array.
    public init(decoding bytes: [UInt8], limits: Limits = .init(), wanted: (String) -> Bool = { _ in true }) throws(ProtobufFailure) {
        var result: Result<VectorTile, ProtobufFailure>?
        bytes.withUnsafeBytes { raw in
            result = Result { () throws(ProtobufFailure) in try VectorTile(decoding: raw, limits: limits, wanted: wanted) }
        }
        self = try result!.get()
    }

    private static func layer(_ bytes: UnsafeRawBufferPointer, limits: Limits,
                              wanted: (String) -> Bool) throws(ProtobufFailure) -> Layer? {
        // The name may follow the features (the spec orders nothing): find it first.
        var reader = ProtobufReader(bytes)
        var name: String?
        while let field = try reader.nextField() {
            if field.number == 1, case .bytes(let text) = field.value {
                name = String(decoding: text, as: UTF8.self)
                break
            }
        }
        guard let name else { throw .malformed("a layer without a name") }
        guard wanted(name) else { return nil }
        reader = ProtobufReader(bytes)
        var keys: [String] = []
        var values: [Value] = []
        var featureBytes: [UnsafeRawBufferPointer] = []
        var extent: UInt32 = 4096
        while let field = try reader.nextField() {
            switch (field.number, field.value) {
            case (2, .bytes(let feature)):
                guard featureBytes.count < limits.maximumFeaturesPerLayer else {
                    throw .malformed("layer \(name) has more than \(limits.maximumFeaturesPerLayer) features")
                }
                featureBytes.append(feature)
            case (3, .bytes(let text)):
                guard keys.count < limits.maximumKeysPerLayer else {
                    throw .malformed("layer \(name) has more than \(limits.maximumKeysPerLayer) keys")
                }
                keys.append(String(decoding: text, as: UTF8.self))
            case (4, .bytes(let value)):
                guard values.count < limits.maximumValuesPerLayer else {
                    throw .malformed("layer \(name) has more than \(limits.maximumValuesPerLayer) values")
                }
                values.append(try Self.value(value))
            case (5, .varint(let value)):
                extent = UInt32(truncatingIfNeeded: value)
            case (1, .bytes), (15, .varint):
                break
            case (1...5, _), (15, _):
                throw .malformed("layer \(name): field \(field.number) has the wrong wire type")
            default:
                break
            }
        }
        var tags: [UInt32] = []
        var features: [Feature] = []
        features.reserveCapacity(featureBytes.count)
        for bytes in featureBytes {
            features.append(try Self.feature(bytes, keyCount: keys.count, valueCount: values.count, tags: &tags,
                                             limit: limits.maximumTagsPerLayer, layer: name))
        }
        return Layer(name: name, extent: extent, keys: keys, values: values, features: features, tags: tags)
    }

    private static func feature(_ bytes: UnsafeRawBufferPointer, keyCount: Int, valueCount: Int, tags: inout [UInt32],
                                limit: Int, layer: String) throws(ProtobufFailure) -> Feature {
        var reader = ProtobufReader(bytes)
        var id: UInt64?
        var type = GeometryType.unknown
        let start = tags.count
        while let field = try reader.nextField() {
            switch (field.number, field.value) {
            case (1, .varint(let value)):
                id = value
            case (2, .bytes(let packed)):
                var pairs = ProtobufReader(packed)
                while let key = try pairs.nextVarint() {
                    guard let value = try pairs.nextVarint() else { throw .malformed("layer \(layer): odd tag count") }
                    guard key < UInt64(keyCount), value < UInt64(valueCount) else {
                        throw .malformed("layer \(layer): tag index out of range")
                    }
                    guard tags.count / 2 < limit else { throw .malformed("layer \(layer) has more than \(limit) tags") }
                    tags.append(UInt32(key))
                    tags.append(UInt32(value))
                }
            case (3, .varint(let value)):
                // An unknown type is UNKNOWN, as the spec's readers treat it.
                type = GeometryType(rawValue: UInt8(truncatingIfNeeded: min(value, 255))) ?? .unknown
            case (4, _):
                break
            case (1...3, _):
                throw .malformed("layer \(layer): feature field \(field.number) has the wrong wire type")
            default:
                break
            }
        }
        return Feature(id: id, type: type, tagStart: start, tagCount: (tags.count - start) / 2)
    }

    /// One `Value` message: the last field set wins, as protobuf readers merge.
    private static func value(_ bytes: UnsafeRawBufferPointer) throws(ProtobufFailure) -> Value {
        var reader = ProtobufReader(bytes)
        var value: Value?
        while let field = try reader.nextField() {
            switch (field.number, field.value) {
            case (1, .bytes(let text)): value = .string(String(decoding: text, as: UTF8.self))
            case (2, .fixed32(let bits)): value = .double(Double(Float(bitPattern: bits)))
            case (3, .fixed64(let bits)): value = .double(Double(bitPattern: bits))
            case (4, .varint(let raw)): value = .int(Int64(bitPattern: raw))
            case (5, .varint(let raw)): value = .uint(raw)
            case (6, .varint(let raw)): value = .int(Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1))
            case (7, .varint(let raw)): value = .bool(raw != 0)
            case (1...7, _): throw .malformed("value field \(field.number) has the wrong wire type")
            default: break
            }
        }
        return value ?? .null
    }
}
