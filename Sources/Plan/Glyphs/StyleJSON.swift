import Foundation
import Packs

/// Style and GeoJSON documents as `JSONValue`s, converted from `JSONSerialization`'s objects with
/// numbers and booleans told apart (`JSONScalar`) and nesting bounded: expressions and
/// properties are evaluated from these, off any `Any`.
enum StyleJSON {
    /// `value` as JSON, nil past `depth` levels of nesting or for something JSON cannot hold.
    static func value(_ value: Any, depth: Int = 64) -> JSONValue? {
        guard depth >= 0 else { return nil }
        switch value {
        case is NSNull: return .null
        case let text as String: return .string(text)
        case let array as [Any]:
            var values: [JSONValue] = []
            values.reserveCapacity(array.count)
            for element in array {
                guard let converted = Self.value(element, depth: depth - 1) else { return nil }
                values.append(converted)
            }
            return .array(values)
        case let object as [String: Any]:
            var values: [String: JSONValue] = [:]
            values.reserveCapacity(object.count)
            for (key, element) in object {
                guard let converted = Self.value(element, depth: depth - 1) else { return nil }
                values[key] = converted
            }
            return .object(values)
        default:
            if let flag = JSONScalar.bool(value) { return .bool(flag) }
            if let number = JSONScalar.double(value) { return .number(number) }
            return nil
        }
    }
}

extension JSONValue {
    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var numberValue: Double? {
        switch self {
        case .number(let number): number
        case .integer(let number): Double(number)
        default: nil
        }
    }

    var arrayValue: [JSONValue]? {
        if case .array(let values) = self { return values }
        return nil
    }

    var objectValue: [String: JSONValue]? {
        if case .object(let values) = self { return values }
        return nil
    }

    /// `["op", …]`: the operator of an expression array.
    var expressionOperator: String? {
        guard case .array(let values) = self, let first = values.first, case .string(let op) = first else { return nil }
        return op
    }
}
