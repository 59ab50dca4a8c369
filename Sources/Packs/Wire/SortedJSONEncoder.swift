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
        case .slot(let slot): write(slot.value, to: &output)
        case .array(let box):
            output.append(UInt8(ascii: "["))
            for (index, element) in box.elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let box):
            output.append(UInt8(ascii: "{"))
            // Stable: a key written twice keeps its last value, as a dictionary would.
            let members = box.members.enumerated().sorted { $0.element.key != $1.element.key ? $0.element.key < $1.element.key : $0.offset < $1.offset }
            var first = true
            for (index, member) in members.enumerated() {
                if index + 1 < members.count, members[index + 1].element.key == member.element.key { continue }
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                writeString(member.element.key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(member.element.node, to: &output)
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

    /// Scalars are held inline; containers are boxes a container fills after handing itself out.
    indirect enum Node {
        case null, bool(Bool), integer(Int64), unsigned(UInt64), number(Double), string(String)
        case array(ArrayBox), object(ObjectBox)
        /// Filled later by a super encoder (rare).
        case slot(Slot)
    }

    final class Slot {
        var value: Node = .null
    }

    final class ArrayBox {
        var elements: [Node] = []
    }

    final class ObjectBox {
        /// Room for a typical object's members from the start (regrowing was a tenth of the time).
        var members: [(key: String, node: Node)] = {
            var members: [(key: String, node: Node)] = []
            members.reserveCapacity(16)
            return members
        }()
    }

    /// Builds one value's tree. Coding paths are not kept: nothing here throws, so nothing would
    /// ever read them, and building them cost an array per nested value.
    final class TreeEncoder: Encoder {
        let root: Slot
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        init(root: Slot = Slot()) {
            self.root = root
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let box: ObjectBox
            if case .object(let existing) = root.value { box = existing } else {
                box = ObjectBox()
                root.value = .object(box)
            }
            return KeyedEncodingContainer(KeyedContainer<Key>(box: box))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let box: ArrayBox
            if case .array(let existing) = root.value { box = existing } else {
                box = ArrayBox()
                root.value = .array(box)
            }
            return UnkeyedContainer(box: box)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            SingleContainer(slot: root)
        }
    }

    /// A value's node: the JSON scalars (and optionals of them) directly, anything else through a
    /// nested encoder.
    static func node(_ value: some Encodable) throws -> Node {
        if let direct = value as? any DirectJSONValue { return direct.jsonNode }
        let encoder = TreeEncoder()
        try value.encode(to: encoder)
        return encoder.root.value
    }

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: ObjectBox
        var codingPath: [any CodingKey] { [] }

        private func set(_ node: Node, _ key: Key) {
            box.members.append((key.stringValue, node))
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
            set(try SortedJSONEncoder.node(value), key)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type,
                                                            forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let nested = ObjectBox()
            set(.object(nested), key)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            set(.array(nested), key)
            return UnkeyedContainer(box: nested)
        }

        mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

        mutating func superEncoder(forKey key: Key) -> any Encoder {
            let slot = Slot()
            set(.slot(slot), key)
            return TreeEncoder(root: slot)
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let box: ArrayBox
        var codingPath: [any CodingKey] { [] }
        var count: Int { box.elements.count }

        mutating func encodeNil() throws { box.elements.append(.null) }
        mutating func encode(_ value: Bool) throws { box.elements.append(.bool(value)) }
        mutating func encode(_ value: String) throws { box.elements.append(.string(value)) }
        mutating func encode(_ value: Double) throws { box.elements.append(.number(value)) }
        mutating func encode(_ value: Int) throws { box.elements.append(.integer(Int64(value))) }
        mutating func encode(_ value: Int64) throws { box.elements.append(.integer(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            box.elements.append(try SortedJSONEncoder.node(value))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let nested = ObjectBox()
            box.elements.append(.object(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = ArrayBox()
            box.elements.append(.array(nested))
            return UnkeyedContainer(box: nested)
        }

        mutating func superEncoder() -> any Encoder {
            let slot = Slot()
            box.elements.append(.slot(slot))
            return TreeEncoder(root: slot)
        }
    }

    struct SingleContainer: SingleValueEncodingContainer {
        let slot: Slot
        var codingPath: [any CodingKey] { [] }

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
            slot.value = try SortedJSONEncoder.node(value)
        }
    }
}

/// Values whose JSON is one node, written without a nested encoder (the bulk of a document:
/// strings, numbers, booleans, and optionals of them).
protocol DirectJSONValue {
    var jsonNode: SortedJSONEncoder.Node { get }
}

extension String: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .string(self) } }
extension Int64: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .integer(self) } }
extension Int: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .integer(Int64(self)) } }
extension Bool: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .bool(self) } }
extension Double: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .number(self) } }

extension Optional: DirectJSONValue where Wrapped: DirectJSONValue {
    var jsonNode: SortedJSONEncoder.Node { self?.jsonNode ?? .null }
}

extension Array: DirectJSONValue where Element: DirectJSONValue {
    var jsonNode: SortedJSONEncoder.Node {
        let box = SortedJSONEncoder.ArrayBox()
        box.elements = map(\.jsonNode)
        return .array(box)
    }
}

extension JSONValue: DirectJSONValue {
    var jsonNode: SortedJSONEncoder.Node {
        switch self {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .integer(let value): return .integer(value)
        case .number(let value): return .number(value)
        case .string(let value): return .string(value)
        case .array(let values): return values.jsonNode
        case .object(let values):
            let box = SortedJSONEncoder.ObjectBox()
            box.members = values.map { (key: $0.key, node: $0.value.jsonNode) }
            return .object(box)
        }
    }
}

extension Timestamp: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .string(rfc3339) } }
extension PackState: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .string(rawValue) } }
extension PackError.Code: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .string(rawValue) } }
extension Base64Bytes: DirectJSONValue { var jsonNode: SortedJSONEncoder.Node { .string(Base64.encode(bytes)) } }
