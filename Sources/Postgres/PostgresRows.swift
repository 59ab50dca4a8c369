import CLibPQ

/// The rows one statement returned, in binary format, owned until this value is released
/// (`PQclear`). Readers check each column's type: reading an `int4` as `int64` works, reading
/// `text` as an integer throws a decoding error naming the column and the SQL, never traps.
public final class PostgresRows: @unchecked Sendable {
    let result: OpaquePointer
    public let sql: String
    public let count: Int
    public let columnCount: Int

    init(result: OpaquePointer, sql: String) {
        self.result = result
        self.sql = sql
        self.count = Int(PQntuples(result))
        self.columnCount = Int(PQnfields(result))
    }

    deinit { PQclear(result) }

    /// Rows an INSERT/UPDATE/DELETE touched (`PQcmdTuples`); 0 for other statements.
    public var affectedRows: Int {
        guard let text = PQcmdTuples(result) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    public func columnName(_ column: Int) -> String {
        guard column >= 0, column < columnCount, let name = PQfname(result, Int32(column)) else { return "" }
        return String(cString: name)
    }

    public func columnType(_ column: Int) -> PostgresType {
        PostgresType(rawValue: PQftype(result, Int32(column)))
    }

    public subscript(row: Int) -> PostgresRow { PostgresRow(rows: self, index: row) }

    public var first: PostgresRow? { count > 0 ? self[0] : nil }
}

extension PostgresRows: Sequence {
    public func makeIterator() -> AnyIterator<PostgresRow> {
        var index = 0
        return AnyIterator {
            guard index < self.count else { return nil }
            defer { index += 1 }
            return self[index]
        }
    }
}

/// One row of a `PostgresRows`; valid while its rows are.
public struct PostgresRow {
    let rows: PostgresRows
    public let index: Int

    public func isNull(_ column: Int) throws(PostgresError) -> Bool {
        try checkColumn(column)
        return PQgetisnull(rows.result, Int32(index), Int32(column)) == 1
    }

    /// The column as an integer (`int2`, `int4`, `int8`, `oid`); nil for NULL.
    public func int64OrNil(_ column: Int) throws(PostgresError) -> Int64? {
        guard let bytes = try raw(column) else { return nil }
        switch rows.columnType(column) {
        case .int8 where bytes.count == 8: return Int64(bigEndian: bytes.loadUnaligned(as: Int64.self))
        case .int4 where bytes.count == 4: return Int64(Int32(bigEndian: bytes.loadUnaligned(as: Int32.self)))
        case .int2 where bytes.count == 2: return Int64(Int16(bigEndian: bytes.loadUnaligned(as: Int16.self)))
        case .oid where bytes.count == 4: return Int64(UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self)))
        default: throw mismatch(column, "an integer")
        }
    }

    public func int64(_ column: Int) throws(PostgresError) -> Int64 {
        guard let value = try int64OrNil(column) else { throw unexpectedNull(column) }
        return value
    }

    public func boolOrNil(_ column: Int) throws(PostgresError) -> Bool? {
        guard let bytes = try raw(column) else { return nil }
        guard rows.columnType(column) == .bool, bytes.count == 1 else { throw mismatch(column, "bool") }
        return bytes[0] != 0
    }

    public func bool(_ column: Int) throws(PostgresError) -> Bool {
        guard let value = try boolOrNil(column) else { throw unexpectedNull(column) }
        return value
    }

    public func doubleOrNil(_ column: Int) throws(PostgresError) -> Double? {
        guard let bytes = try raw(column) else { return nil }
        switch rows.columnType(column) {
        case .float8 where bytes.count == 8: return Double(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self)))
        case .float4 where bytes.count == 4: return Double(Float(bitPattern: UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self))))
        default: throw mismatch(column, "a float")
        }
    }

    /// Text-like columns (`text`, `varchar`, `name`, `json`, `jsonb`) as a String; nil for NULL.
    public func stringOrNil(_ column: Int) throws(PostgresError) -> String? {
        guard var bytes = try raw(column) else { return nil }
        let type = rows.columnType(column)
        if type == .jsonb {
            // jsonb_send: a version byte (1), then the text.
            guard bytes.first == 1 else { throw mismatch(column, "jsonb version 1") }
            bytes = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        } else if !type.isText {
            throw mismatch(column, "text")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw mismatch(column, "UTF-8 text") }
        return text
    }

    public func string(_ column: Int) throws(PostgresError) -> String {
        guard let value = try stringOrNil(column) else { throw unexpectedNull(column) }
        return value
    }

    /// A `bytea` (or text) column's bytes, copied; nil for NULL.
    public func bytesOrNil(_ column: Int) throws(PostgresError) -> [UInt8]? {
        guard let bytes = try raw(column) else { return nil }
        let type = rows.columnType(column)
        guard type == .bytea || type.isText else { throw mismatch(column, "bytea") }
        return [UInt8](bytes)
    }

    public func bytes(_ column: Int) throws(PostgresError) -> [UInt8] {
        guard let value = try bytesOrNil(column) else { throw unexpectedNull(column) }
        return value
    }

    /// The column's bytes without copying, valid while the rows are; nil for NULL.
    public func withUnsafeBytes<R>(_ column: Int, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        try body(try raw(column))
    }

    // MARK: Decoding

    private func raw(_ column: Int) throws(PostgresError) -> UnsafeRawBufferPointer? {
        try checkColumn(column)
        let (row, field) = (Int32(index), Int32(column))
        if PQgetisnull(rows.result, row, field) == 1 { return nil }
        let length = Int(PQgetlength(rows.result, row, field))
        guard let value = PQgetvalue(rows.result, row, field) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: value, count: length)
    }

    private func checkColumn(_ column: Int) throws(PostgresError) {
        guard index >= 0, index < rows.count, column >= 0, column < rows.columnCount else {
            throw PostgresError(kind: .misuse, message: "row \(index) column \(column) is out of range "
                + "(\(rows.count) rows, \(rows.columnCount) columns)", sql: rows.sql)
        }
    }

    private func mismatch(_ column: Int, _ expected: String) -> PostgresError {
        PostgresError(kind: .decoding, message: "column \(column) (\(rows.columnName(column))) is "
            + "\(rows.columnType(column)), read as \(expected)", sql: rows.sql)
    }

    private func unexpectedNull(_ column: Int) -> PostgresError {
        PostgresError(kind: .decoding, message: "column \(column) (\(rows.columnName(column))) is NULL", sql: rows.sql)
    }
}
