/// Encodes `Encodable` values as JSON with object keys in code-point order and `/` unescaped,
/// the canonical bytes of every document packd serves (stable bodies and ETags).
///
/// Why not Foundation's `JSONEncoder` with `.sortedKeys`: on Linux it sorts with a locale-aware
/// comparison, which `packd-bench api` once measured as about 70% of serving
/// `GET /v1/packs/{id}`. Doubles are written as Swift prints them (`0.0`, `1.5`), integers as
/// integers, non-finite numbers as `null`.
public enum SortedJSONEncoder {
    public static func encode(_ value: some Encodable) throws -> [UInt8] {
        let encoder = TreeEncoder()
        try value.encode(to: encoder)
        var output: [UInt8] = []
        output.reserveCapacity(512)
        write(encoder.root.value, to: &output)
        return output
    }

    /// Writes a tree as JSON.
    static func write(_ node: Node, to output: inout [UInt8]) {
        switch node {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .integer(let value): output.append(contentsOf: String(value).utf8)
        case .unsigned(let value): output.append(contentsOf: String(value).utf8)
        case .number(let value): output.append(contentsOf: (value.isFinite ? String(describing: value) : "null").utf8)
        case .string(let value): writeString(value, to: &output)
        case .array(let box):
            output.append(UInt8(ascii: "["))
            for (index, element) in box.elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element.value, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let box):
            output.append(UInt8(ascii: "{"))
            for (index, key) in box.members.keys.sorted().enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                writeString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(box.members[key]!.value, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped, `/` and non-ASCII as is.
    public static func writeString(_ string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    // MARK: The tree an encoding builds

    indirect enum Node {
        case null, bool(Bool), integer(Int64), unsigned(UInt64), number(Double), string(String)
        case array(ArrayBox), object(ObjectBox)
    }

    /// A slot a container fills later (containers are handed out before they are filled).
    final class Slot {
        var value: Node = .null
    }

    final class ArrayBox {
        var elements: [Slot] = []
    }

    final class ObjectBox {
        var members: [String: Slot] = [:]
    }

    final class TreeEncoder: Encoder {
        let root: Slot
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        init(root: Slot = Slot(), codingPath: [any CodingKey] = []) {
            self.root = root
            self.codingPath = codingPath
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let box: ObjectBox
            if case .object(let existing) = root.value { box = existing } else {
                box = ObjectBox()
                root.value = .object(box)
            }
            return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let box: ArrayBox
            if case .array(let existing) = root.value { box = existing } else {
                box = ArrayBox()
                root.value = .array(box)
            }
            return UnkeyedContainer(box: box, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            SingleContainer(slot: root, codingPath: codingPath)
        }
    }

    /// Scalars straight into a node; anything else through a nested encoder.
    static func node(_ value: some Encodable, codingPath: [any CodingKey]) throws -> Node {
        switch value {
        case let value as String: return .string(value)
        case let value as Int64: return .integer(value)
        case let value as Int: return .integer(Int64(value))
        case let value as Bool: return .bool(value)
        case let value as Double: return .number(value)
        default:
            let encoder = TreeEncoder(codingPath: codingPath)
            try value.encode(to: encoder)
            return encoder.root.value
        }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: ObjectBox
        let codingPath: [any CodingKey]

        private func set(_ node: Node, _ key: Key) {
            let slot = Slot()
            slot.value = node
            box.members[key.stringValue] = slot
        }

        mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
        mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
        mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
        mutating func encode(_ value: Double, forKey key: Key) throws { set(.number(value), key) }
        mutating func encode(_ value: Float, forKey key: Key) throws { set(.number(Double(value)), key) }
        mutating func encode(_ value: Int, forKey key: Key) throws { set(.integer(Int64(value)), key) }
        mutating func encode(_ value: Int8, forKey key: Key) throws { set(.integer(Int64(value)), key) }
        mutating func encode(_ value: Int16, forKey key: Key) throws { set(.integer(Int64(value)), key) }
        mutating func encode(_ value: Int32, forKey key: Key) throws { set(.integer(Int64(value)), key) }
        mutating func encode(_ value: Int64, forKey key: Key) throws { set(.integer(value), key) }
        mutating func encode(_ value: UInt, forKey key: Key) throws { set(.unsigned(UInt64(value)), key) }
        mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.unsigned(UInt64(value)), key) }
        mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.unsigned(UInt64(value)), key) }
        mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.unsigned(UInt64(value)), key) }
        mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.unsigned(value), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            set(try SortedJSONEncoder.node(value, codingPath: codingPath + [key]), key)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                            forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let nested = ObjectBox()
            set(.object(nested), key)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            set(.array(nested), key)
            return UnkeyedContainer(box: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            let slot = Slot()
            box.members[key.stringValue] = slot
            return TreeEncoder(root: slot, codingPath: codingPath + [key])
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let box: ArrayBox
        let codingPath: [any CodingKey]
        var count: Int { box.elements.count }

        private func append(_ node: Node) {
            let slot = Slot()
            slot.value = node
            box.elements.append(slot)
        }

        mutating func encodeNil() throws { append(.null) }
        mutating func encode(_ value: Bool) throws { append(.bool(value)) }
        mutating func encode(_ value: String) throws { append(.string(value)) }
        mutating func encode(_ value: Double) throws { append(.number(value)) }
        mutating func encode(_ value: Int) throws { append(.integer(Int64(value))) }
        mutating func encode(_ value: Int64) throws { append(.integer(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            append(try SortedJSONEncoder.node(value, codingPath: codingPath))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let nested = ObjectBox()
            append(.object(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: codingPath))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            append(.array(nested))
            return UnkeyedContainer(box: nested, codingPath: codingPath)
        }

        mutating func superEncoder() -> any Encoder {
            let slot = Slot()
            box.elements.append(slot)
            return TreeEncoder(root: slot, codingPath: codingPath)
        }
    }

    struct SingleContainer: SingleValueEncodingContainer {
        let slot: Slot
        let codingPath: [any CodingKey]

        mutating func encodeNil() throws { slot.value = .null }
        mutating func encode(_ value: Bool) throws { slot.value = .bool(value) }
        mutating func encode(_ value: String) throws { slot.value = .string(value) }
        mutating func encode(_ value: Double) throws { slot.value = .number(value) }
        mutating func encode(_ value: Float) throws { slot.value = .number(Double(value)) }
        mutating func encode(_ value: Int) throws { slot.value = .integer(Int64(value)) }
        mutating func encode(_ value: Int8) throws { slot.value = .integer(Int64(value)) }
        mutating func encode(_ value: Int16) throws { slot.value = .integer(Int64(value)) }
        mutating func encode(_ value: Int32) throws { slot.value = .integer(Int64(value)) }
        mutating func encode(_ value: Int64) throws { slot.value = .integer(value) }
        mutating func encode(_ value: UInt) throws { slot.value = .unsigned(UInt64(value)) }
        mutating func encode(_ value: UInt8) throws { slot.value = .unsigned(UInt64(value)) }
        mutating func encode(_ value: UInt16) throws { slot.value = .unsigned(UInt64(value)) }
        mutating func encode(_ value: UInt32) throws { slot.value = .unsigned(UInt64(value)) }
        mutating func encode(_ value: UInt64) throws { slot.value = .unsigned(value) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            slot.value = try SortedJSONEncoder.node(value, codingPath: codingPath)
        }
    }
}
