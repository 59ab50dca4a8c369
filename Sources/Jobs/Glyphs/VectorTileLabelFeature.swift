import Packs
import Plan
import TileFormats

/// A feature of a decoded vector tile as label expressions read it. Property values become JSON
/// on demand (numbers as `.number`, as expressions compare them).
public struct VectorTileLabelFeature: LabelFeature {
    public let layer: VectorTile.Layer
    /// The layer's keys by name, made once per layer.
    public let keys: [String: Int]
    public let feature: VectorTile.Feature

    public init(layer: VectorTile.Layer, keys: [String: Int], feature: VectorTile.Feature) {
        self.layer = layer
        self.keys = keys
        self.feature = feature
    }

    public static func keys(of layer: VectorTile.Layer) -> [String: Int] {
        var keys: [String: Int] = [:]
        for (index, key) in layer.keys.enumerated() where keys[key] == nil { keys[key] = index }
        return keys
    }

    public func property(_ key: String) -> JSONValue? {
        guard let index = keys[key] else { return nil }
        return layer.value(keyIndex: index, of: feature).map(Self.json)
    }

    public var properties: [String: JSONValue] {
        var properties: [String: JSONValue] = [:]
        for (key, value) in layer.properties(of: feature) { properties[key] = Self.json(value) }
        return properties
    }

    public var id: JSONValue? { feature.id.map { .number(Double($0)) } }
    public var baseGeometryType: String? { feature.type.name }
    /// A vector tile says "Point" for one point and many alike: only the geometry would tell.
    public var mayBeMulti: Bool { true }

    static func json(_ value: VectorTile.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .double(let number): .number(number)
        case .int(let number): .number(Double(number))
        case .uint(let number): .number(Double(number))
        case .bool(let flag): .bool(flag)
        case .null: .null
        }
    }
}
