import Foundation

/// Decodes `Decodable` values straight from what `JSONSerialization` parsed (dictionaries,
/// arrays, `NSNumber`, strings, `NSNull`), so a request body is parsed once: the strict decoder
/// checks its unknown fields on the same objects, and `POST /v1/packs` validates its `region`
/// from them.
///
/// Errors are the `DecodingError`s `JSONDecoder` throws for the same JSON, with the same coding
/// paths, so the problems answered (`StrictJSONDecoder.problem(for:)`) are those a decode of the
/// bytes gave: an integer that does not fit is `JSONDecoder`'s data-corrupted "not valid JSON"
/// at the root, and a number written with a fraction or an exponent asked for as an integer is
/// converted by `JSONDecoder` itself, from its JSON text, so its rules hold exactly (`1e3` is
/// 1000; `1.5` and `1e30` are refused). Two differences remain, both for floating-point fields,
/// which no request type has: `-0` decodes as `0` (`JSONSerialization` keeps no sign of an
/// integer zero) and a number too small for a `Double` as `0` rather than refused.
struct JSONObjectDecoder {
    func decode<T: Decodable>(_ type: T.Type, from value: Any) throws -> T {
        try ObjectDecoder(value: value, codingPath: []).unbox(value, as: type, at: [])
    }

    /// A key of an array element (`intValue`) or of an object (`stringValue`).
    struct Key: CodingKey {
        let stringValue: String
        let intValue: Int?

        init(stringValue: String) {
            self.stringValue = stringValue
            intValue = nil
        }

        init(intValue: Int) {
            stringValue = "Index \(intValue)"
            self.intValue = intValue
        }
    }
}

private final class ObjectDecoder: Decoder {
    let value: Any
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: Any, codingPath: [any CodingKey]) {
        self.value = value
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if value is NSNull {
            throw DecodingError.valueNotFound([String: Any].self, .init(
                codingPath: codingPath, debugDescription: "Cannot get keyed decoding container -- found null value instead"))
        }
        guard let object = value as? [String: Any] else { throw mismatch([String: Any].self, value, codingPath) }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if value is NSNull {
            throw DecodingError.valueNotFound([Any].self, .init(
                codingPath: codingPath, debugDescription: "Cannot get unkeyed decoding container -- found null value instead"))
        }
        guard let array = value as? [Any] else { throw mismatch([Any].self, value, codingPath) }
        return UnkeyedContainer(array: array, decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self)
    }

    /// `value` as `T`: scalars converted as `JSONDecoder` converts them, anything else decoded
    /// by `T` from a decoder at `path`.
    func unbox<T: Decodable>(_ value: Any, as type: T.Type, at path: [any CodingKey]) throws -> T {
        if type == Bool.self {
            guard let number = value as? NSNumber, !(value is String), Self.isBoolean(number) else { throw mismatch(type, value, path) }
            return number.boolValue as! T
        }
        if type == String.self {
            guard let string = value as? String, !(value is NSNumber) else { throw mismatch(type, value, path) }
            return string as! T
        }
        if type == Double.self || type == Float.self {
            let number = try self.number(value, type, path)
            return (type == Double.self ? number.doubleValue as Any : Float(number.doubleValue) as Any) as! T
        }
        if let integer = type as? any (FixedWidthInteger & Decodable).Type {
            return try self.integer(value, integer, path) as! T
        }
        return try T(from: ObjectDecoder(value: value, codingPath: path))
    }

    private func number(_ value: Any, _ type: Any.Type, _ path: [any CodingKey]) throws -> NSNumber {
        guard let number = value as? NSNumber, !(value is String), !Self.isBoolean(number) else { throw mismatch(type, value, path) }
        return number
    }

    private func integer<I: FixedWidthInteger & Decodable>(_ value: Any, _ type: I.Type, _ path: [any CodingKey]) throws -> I {
        let number = try self.number(value, type, path)
        // `Int64.min` too goes to `JSONDecoder`, which refuses it (it reads the digits as a
        // positive number before the sign).
        guard Self.isFloatingPoint(number) || number.int64Value == .min else {
            // `JSONDecoder` reports an integer that does not fit as data corruption of the whole body.
            guard let converted = I(exactly: number.int64Value) else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "The given data was not valid JSON."))
            }
            return converted
        }
        // `JSONDecoder`'s own rules, which read the digits of the text (not a `Double`).
        return try JSONDecoder().decode(type, from: JSONSerialization.data(withJSONObject: number, options: [.fragmentsAllowed]))
    }

    /// The types `unbox` converts itself (a null is refused for them at once).
    static func isScalar(_ type: Any.Type) -> Bool {
        type == Bool.self || type == String.self || type == Double.self || type == Float.self || type is any FixedWidthInteger.Type
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    private static func isFloatingPoint(_ number: NSNumber) -> Bool {
        let type = String(cString: number.objCType)
        return type == "d" || type == "f"
    }

    func mismatch(_ type: Any.Type, _ value: Any, _ path: [any CodingKey]) -> DecodingError {
        .typeMismatch(type, .init(codingPath: path, debugDescription: "Expected to decode \(type) but found \(Swift.type(of: value)) instead."))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: Any]
    let decoder: ObjectDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> Any {
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) is NSNull }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let value = try value(key)
        // A null object or array is refused by its container, as `JSONDecoder` refuses it.
        if value is NSNull, ObjectDecoder.isScalar(type) {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: "Expected \(type) value but found null instead."))
        }
        return try decoder.unbox(value, as: type, at: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ObjectDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ObjectDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ObjectDecoder(value: object["super"] ?? NSNull(), codingPath: codingPath + [JSONObjectDecoder.Key(stringValue: "super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ObjectDecoder(value: object[key.stringValue] ?? NSNull(), codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let array: [Any]
    let decoder: ObjectDecoder
    var currentIndex = 0

    init(array: [Any], decoder: ObjectDecoder) {
        self.array = array
        self.decoder = decoder
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }
    private var key: JSONObjectDecoder.Key { JSONObjectDecoder.Key(intValue: currentIndex) }

    private func next(_ type: Any.Type) throws -> Any {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: "Unkeyed container is at end."))
        }
        return array[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard try next(Never.self) is NSNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try next(type)
        if value is NSNull, ObjectDecoder.isScalar(type) {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: "Expected \(type) but found null instead."))
        }
        let decoded = try decoder.unbox(value, as: type, at: codingPath + [key])
        currentIndex += 1
        return decoded
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let container = try ObjectDecoder(value: try next(type), codingPath: codingPath + [key]).container(keyedBy: type)
        currentIndex += 1
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let container = try ObjectDecoder(value: try next([Any].self), codingPath: codingPath + [key]).unkeyedContainer()
        currentIndex += 1
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = ObjectDecoder(value: try next(Any.self), codingPath: codingPath + [key])
        currentIndex += 1
        return decoder
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: ObjectDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.value is NSNull }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if decoder.value is NSNull, ObjectDecoder.isScalar(type) {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "Expected \(type) but found null value instead."))
        }
        return try decoder.unbox(decoder.value, as: type, at: codingPath)
    }
}
