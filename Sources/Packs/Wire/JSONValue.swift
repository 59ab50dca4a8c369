import Foundation

/// Any JSON document, for the parts of a wire type that are free-form (a GeoJSON geometry).
/// Numbers keep whether they were written as integers.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var values: [JSONValue] = []
            while !array.isAtEnd { values.append(try array.decode(JSONValue.self)) }
            self = .array(values)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var values: [String: JSONValue] = [:]
            for key in object.allKeys { values[key.stringValue] = try object.decode(JSONValue.self, forKey: key) }
            self = .object(values)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .integer(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .object(let values):
            var container = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in values { try container.encode(value, forKey: AnyKey(key)) }
        }
    }

    /// The value as `JSONSerialization` produces and consumes it (arrays, dictionaries, `NSNull`…).
    public var foundationObject: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let value): return value
        case .integer(let value): return value
        case .number(let value): return value
        case .string(let value): return value
        case .array(let values): return values.map(\.foundationObject)
        case .object(let values): return values.mapValues(\.foundationObject)
        }
    }
}

/// A coding key of any name.
struct AnyKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(_ string: String) {
        stringValue = string
    }

    init?(stringValue: String) {
        self.stringValue = stringValue
    }

    init?(intValue: Int) {
        nil
    }
}

extension JSONValue {
    /// A value made by Swift code in `JSONSerialization`'s vocabulary (dictionaries, arrays,
    /// strings, Swift numbers, `Bool`); nil for anything else.
    public init?(foundationObject value: Any) {
        switch value {
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .integer(Int64(value))
        case let value as Int64: self = .integer(value)
        case let value as Double: self = .number(value)
        case let value as String: self = .string(value)
        case let values as [Any]:
            var array: [JSONValue] = []
            array.reserveCapacity(values.count)
            for element in values {
                guard let converted = JSONValue(foundationObject: element) else { return nil }
                array.append(converted)
            }
            self = .array(array)
        case let values as [String: Any]:
            var object: [String: JSONValue] = [:]
            for (key, element) in values {
                guard let converted = JSONValue(foundationObject: element) else { return nil }
                object[key] = converted
            }
            self = .object(object)
        default:
            return nil
        }
    }
}
