/// The layers of Mapbox Vector Tiles and their attribute names and types, gathered across every
/// tile of an export for MBTiles' `vector_layers` (GDAL and tile servers read the layer list from
/// it). A minimal protobuf walk: names, keys, value kinds and feature tags only; geometry is
/// skipped by length. Untrusted input: malformed tiles are reported, never trapped on, and the
/// number of layers and fields kept is bounded.
public struct VectorTileLayers: Sendable {
    public enum FieldType: String, Sendable {
        case string = "String", number = "Number", boolean = "Boolean", mixed = "Mixed"

        public func merged(with other: FieldType) -> FieldType { self == other ? self : .mixed }
    }

    public struct Layer: Equatable, Sendable {
        public var fields: [String: FieldType] = [:]
        public var minZoom: Int
        public var maxZoom: Int
    }

    public typealias Failure = ProtobufFailure

    public static let maximumLayers = 1_000
    public static let maximumFieldsPerLayer = 1_000

    public private(set) var layers: [String: Layer] = [:]

    public init() {}

    /// Adds the layers of one decoded (uncompressed) tile at zoom `z`.
    public mutating func add(tile bytes: UnsafeRawBufferPointer, zoom z: Int) throws(Failure) {
        var reader = ProtobufReader(bytes)
        while let field = try reader.nextField() {
            if field.number == 3, case .bytes(let layer) = field.value {
                try addLayer(layer, zoom: z)
            }
        }
    }

    private mutating func addLayer(_ bytes: UnsafeRawBufferPointer, zoom z: Int) throws(Failure) {
        var reader = ProtobufReader(bytes)
        var name: String?
        var keys: [String] = []
        var values: [FieldType?] = []
        var features: [UnsafeRawBufferPointer] = []
        while let field = try reader.nextField() {
            switch (field.number, field.value) {
            case (1, .bytes(let text)): name = String(decoding: text, as: UTF8.self)
            case (2, .bytes(let feature)): features.append(feature)
            case (3, .bytes(let text)): keys.append(String(decoding: text, as: UTF8.self))
            case (4, .bytes(let value)): values.append(try Self.valueType(value))
            default: break
            }
        }
        guard let name else { throw .malformed("layer without a name") }
        if layers[name] == nil, layers.count >= Self.maximumLayers { return }
        var layer = layers[name] ?? Layer(minZoom: z, maxZoom: z)
        layer.minZoom = min(layer.minZoom, z)
        layer.maxZoom = max(layer.maxZoom, z)
        // Types per key index first (array slots, no hashing per tag), then merged by name.
        var keyTypes = [FieldType?](repeating: nil, count: keys.count)
        for feature in features {
            var reader = ProtobufReader(feature)
            while let field = try reader.nextField() {
                guard field.number == 2, case .bytes(let packed) = field.value else { continue }
                var tags = ProtobufReader(packed)
                while let keyIndex = try tags.nextVarint() {
                    guard let valueIndex = try tags.nextVarint() else { throw .malformed("odd tag count") }
                    guard keyIndex < UInt64(keys.count), valueIndex < UInt64(values.count) else {
                        throw .malformed("tag index out of range")
                    }
                    guard let type = values[Int(valueIndex)] else { continue }
                    keyTypes[Int(keyIndex)] = keyTypes[Int(keyIndex)]?.merged(with: type) ?? type
                }
            }
        }
        for (index, type) in keyTypes.enumerated() {
            guard let type else { continue }
            let key = keys[index]
            if let existing = layer.fields[key] {
                layer.fields[key] = existing.merged(with: type)
            } else if layer.fields.count < Self.maximumFieldsPerLayer {
                layer.fields[key] = type
            }
        }
        layers[name] = layer
    }

    private static func valueType(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> FieldType? {
        var reader = ProtobufReader(bytes)
        var type: FieldType?
        while let field = try reader.nextField() {
            switch field.number {
            case 1: type = .string
            case 2, 3, 4, 5, 6: type = .number
            case 7: type = .boolean
            default: break
            }
        }
        return type
    }

    /// The `vector_layers` array of TileJSON / MBTiles metadata, sorted by layer id.
    public var tileJSONVectorLayers: [[String: Any]] {
        layers.sorted { $0.key < $1.key }.map { name, layer in
            ["id": name, "fields": layer.fields.mapValues(\.rawValue), "minzoom": layer.minZoom,
                    "maxzoom": layer.maxZoom, "description": ""]
        }
    }
}
