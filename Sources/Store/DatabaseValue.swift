/// One SQLite value, for binding arguments whose types vary at run time (GRDB's
/// `DatabaseValue`). Hot paths bind typed values directly on `Statement` instead.
public enum DatabaseValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension DatabaseValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByNilLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension DatabaseValue {
    public init(_ value: Int) { self = .integer(Int64(value)) }
    public init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
    public init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    public init(_ value: [UInt8]?) { self = value.map { .blob($0) } ?? .null }
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }
}
