/// One statement parameter, sent in PostgreSQL's binary format with its type, so bodies travel
/// as raw bytes (no hex or escaping) and integers need no parsing. Arrays let one statement carry
/// a whole batch (`INSERT … SELECT * FROM unnest($1::int8[], $2::bytea[])`, `= ANY($1)`).
public enum PostgresValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int8(Int64)
    case float8(Double)
    case text(String)
    case bytea([UInt8])
    case int8Array([Int64?])
    case textArray([String?])
    case byteaArray([[UInt8]?])
    case boolArray([Bool?])

    /// The type the server is told (0 for NULL: the server infers it from the statement).
    var type: PostgresType {
        switch self {
        case .null: return .unknown
        case .bool: return .bool
        case .int8: return .int8
        case .float8: return .float8
        case .text: return .text
        case .bytea: return .bytea
        case .int8Array: return .int8Array
        case .textArray: return .textArray
        case .byteaArray: return .byteaArray
        case .boolArray: return .boolArray
        }
    }

    /// Appends the binary encoding to `buffer`; nil for NULL (sent as a null pointer).
    func encode(into buffer: inout [UInt8]) -> Bool {
        switch self {
        case .null: return false
        case .bool(let value): buffer.append(value ? 1 : 0)
        case .int8(let value): buffer.appendBigEndian(value)
        case .float8(let value): buffer.appendBigEndian(Int64(bitPattern: value.bitPattern))
        case .text(let value): buffer.append(contentsOf: value.utf8)
        case .bytea(let value): buffer.append(contentsOf: value)
        case .int8Array(let values):
            Self.encodeArray(values, element: .int8, into: &buffer) { $1.appendBigEndian($0) }
        case .textArray(let values):
            Self.encodeArray(values, element: .text, into: &buffer) { $1.append(contentsOf: $0.utf8) }
        case .byteaArray(let values):
            Self.encodeArray(values, element: .bytea, into: &buffer) { $1.append(contentsOf: $0) }
        case .boolArray(let values):
            Self.encodeArray(values, element: .bool, into: &buffer) { $1.append($0 ? 1 : 0) }
        }
        return true
    }

    /// A one-dimensional array in `array_send`'s layout: dimensions, flags, element type, then each
    /// element as a length (-1 for NULL) and its bytes.
    private static func encodeArray<Element>(_ values: [Element?], element: PostgresType, into buffer: inout [UInt8],
                                             _ encode: (Element, inout [UInt8]) -> Void) {
        buffer.appendBigEndian(Int32(values.isEmpty ? 0 : 1))
        buffer.appendBigEndian(Int32(values.contains { $0 == nil } ? 1 : 0))
        buffer.appendBigEndian(Int32(bitPattern: element.rawValue))
        guard !values.isEmpty else { return }
        buffer.appendBigEndian(Int32(values.count))
        buffer.appendBigEndian(Int32(1))
        for value in values {
            guard let value else {
                buffer.appendBigEndian(Int32(-1))
                continue
            }
            let lengthAt = buffer.count
            buffer.appendBigEndian(Int32(0))
            encode(value, &buffer)
            let length = Int32(buffer.count - lengthAt - 4)
            Swift.withUnsafeBytes(of: length.bigEndian) { bytes in
                for index in 0..<4 { buffer[lengthAt + index] = bytes[index] }
            }
        }
    }
}

extension PostgresValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByNilLiteral,
    ExpressibleByBooleanLiteral
{
    public init(integerLiteral value: Int64) { self = .int8(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PostgresValue {
    public init(_ value: Int) { self = .int8(Int64(value)) }
    public init(_ value: Int64?) { self = value.map { .int8($0) } ?? .null }
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    public init(_ value: [UInt8]?) { self = value.map { .bytea($0) } ?? .null }
}

/// The type OIDs packd sends and reads (`pg_type.oid`; stable across PostgreSQL versions).
public struct PostgresType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let unknown = PostgresType(rawValue: 0)
    public static let bool = PostgresType(rawValue: 16)
    public static let bytea = PostgresType(rawValue: 17)
    public static let name = PostgresType(rawValue: 19)
    public static let int8 = PostgresType(rawValue: 20)
    public static let int2 = PostgresType(rawValue: 21)
    public static let int4 = PostgresType(rawValue: 23)
    public static let text = PostgresType(rawValue: 25)
    public static let oid = PostgresType(rawValue: 26)
    public static let json = PostgresType(rawValue: 114)
    public static let float4 = PostgresType(rawValue: 700)
    public static let float8 = PostgresType(rawValue: 701)
    public static let boolArray = PostgresType(rawValue: 1000)
    public static let byteaArray = PostgresType(rawValue: 1001)
    public static let textArray = PostgresType(rawValue: 1009)
    public static let int8Array = PostgresType(rawValue: 1016)
    public static let bpchar = PostgresType(rawValue: 1042)
    public static let varchar = PostgresType(rawValue: 1043)
    public static let timestamptz = PostgresType(rawValue: 1184)
    public static let numeric = PostgresType(rawValue: 1700)
    public static let void = PostgresType(rawValue: 2278)
    public static let jsonb = PostgresType(rawValue: 3802)

    public var description: String {
        switch self {
        case .bool: return "bool"
        case .bytea: return "bytea"
        case .name: return "name"
        case .int8: return "int8"
        case .int2: return "int2"
        case .int4: return "int4"
        case .text: return "text"
        case .oid: return "oid"
        case .json: return "json"
        case .float4: return "float4"
        case .float8: return "float8"
        case .bpchar: return "bpchar"
        case .varchar: return "varchar"
        case .timestamptz: return "timestamptz"
        case .numeric: return "numeric"
        case .void: return "void"
        case .jsonb: return "jsonb"
        case .int8Array: return "int8[]"
        case .textArray: return "text[]"
        case .byteaArray: return "bytea[]"
        case .boolArray: return "bool[]"
        default: return "oid \(rawValue)"
        }
    }

    /// Types read as text: their binary form is their UTF-8 text.
    var isText: Bool { [.text, .varchar, .name, .bpchar, .json].contains(self) }
}

extension Array where Element == UInt8 {
    @inline(__always)
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
