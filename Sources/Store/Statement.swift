import CSQLite

/// A prepared statement. Owned by its `Database` (which caches it by SQL text) and used on that
/// connection's thread only. Parameter and column indexes follow SQLite: parameters from 1,
/// columns from 0.
public final class Statement {
    let handle: OpaquePointer
    public let sql: String
    /// The connection, for error messages. Not the `Database` object: a statement may outlive it
    /// (`sqlite3_close_v2` keeps the connection alive until its last statement is finalized).
    private let connection: OpaquePointer

    init(database: Database, sql: String) throws(DatabaseError) {
        var handle: OpaquePointer?
        let result = sql.withCString { text in
            sqlite3_prepare_v3(database.handle, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        }
        guard result == SQLITE_OK, let handle else {
            throw DatabaseError(result: result == SQLITE_OK ? SQLITE_MISUSE : result, connection: database.handle, sql: sql)
        }
        self.handle = handle
        self.sql = sql
        self.connection = database.handle
    }

    deinit { sqlite3_finalize(handle) }

    // MARK: Binding

    public func bind(_ value: Int64, at index: Int32) throws(DatabaseError) {
        try check(sqlite3_bind_int64(handle, index, value), connection, sql: sql)
    }

    public func bind(_ value: Int, at index: Int32) throws(DatabaseError) {
        try bind(Int64(value), at: index)
    }

    public func bind(_ value: Double, at index: Int32) throws(DatabaseError) {
        try check(sqlite3_bind_double(handle, index, value), connection, sql: sql)
    }

    public func bind(_ value: Bool, at index: Int32) throws(DatabaseError) {
        try bind(Int64(value ? 1 : 0), at: index)
    }

    public func bind(_ value: String, at index: Int32) throws(DatabaseError) {
        var value = value
        let result = value.withUTF8 { utf8 -> Int32 in
            // An empty string still needs a non-nil pointer or SQLite stores NULL.
            let base = UnsafeRawPointer(utf8.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self)
            return sqlite3_bind_text64(handle, index, base, sqlite3_uint64(utf8.count), packd_sqlite3_transient(), UInt8(SQLITE_UTF8))
        }
        try check(result, connection, sql: sql)
    }

    /// Binds bytes as a BLOB (an empty buffer is an empty BLOB, not NULL). SQLite copies them.
    public func bind(blob bytes: UnsafeRawBufferPointer, at index: Int32) throws(DatabaseError) {
        // A zero-length blob still needs a non-nil pointer or SQLite stores NULL.
        let base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        try check(sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(bytes.count), packd_sqlite3_transient()),
                  connection, sql: sql)
    }

    public func bind(blob bytes: [UInt8], at index: Int32) throws(DatabaseError) {
        let result = bytes.withUnsafeBytes { raw -> Int32 in
            let base = raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
            return sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(raw.count), packd_sqlite3_transient())
        }
        try check(result, connection, sql: sql)
    }

    public func bindNull(at index: Int32) throws(DatabaseError) {
        try check(sqlite3_bind_null(handle, index), connection, sql: sql)
    }

    public func bind(_ value: Int64?, at index: Int32) throws(DatabaseError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    public func bind(_ value: String?, at index: Int32) throws(DatabaseError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    public func bind(_ value: DatabaseValue, at index: Int32) throws(DatabaseError) {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let int): try bind(int, at: index)
        case .real(let double): try bind(double, at: index)
        case .text(let text): try bind(text, at: index)
        case .blob(let bytes): try bind(blob: bytes, at: index)
        }
    }

    /// Resets the statement and binds `arguments` to parameters 1…n.
    public func bind(_ arguments: [DatabaseValue]) throws(DatabaseError) {
        reset()
        for (offset, value) in arguments.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    // MARK: Stepping

    /// Advances to the next row: `true` when a row is available, `false` when done.
    @discardableResult
    public func step() throws(DatabaseError) -> Bool {
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            sqlite3_reset(handle)
            throw DatabaseError(result: result, connection: connection, sql: sql)
        }
    }

    /// Makes the statement reusable and drops bindings so no stale blob is kept alive.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Runs a statement that returns no rows (or whose rows are ignored) with `arguments`.
    public func execute(_ arguments: [DatabaseValue] = []) throws(DatabaseError) {
        try bind(arguments)
        while try step() {}
        sqlite3_reset(handle)
    }

    /// Runs a query and calls `body` for each row.
    public func forEachRow(_ arguments: [DatabaseValue] = [], _ body: (Statement) throws -> Void) throws {
        try bind(arguments)
        defer { sqlite3_reset(handle) }
        while try step() { try body(self) }
    }

    /// Runs a query and returns its first row's column 0 as an integer (nil: no row or NULL).
    public func scalarInt(_ arguments: [DatabaseValue] = []) throws(DatabaseError) -> Int64? {
        try bind(arguments)
        defer { sqlite3_reset(handle) }
        guard try step(), !isNull(at: 0) else { return nil }
        return int64(at: 0)
    }

    // MARK: Reading the current row

    public var columnCount: Int32 { sqlite3_column_count(handle) }

    public func isNull(at column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    public func int64(at column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    public func optionalInt64(at column: Int32) -> Int64? {
        isNull(at: column) ? nil : int64(at: column)
    }

    public func double(at column: Int32) -> Double { sqlite3_column_double(handle, column) }

    public func string(at column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// The column as bytes; nil for NULL, `[]` for an empty BLOB.
    public func blob(at column: Int32) -> [UInt8]? {
        if isNull(at: column) { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let base = sqlite3_column_blob(handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }

    /// Lends the column's bytes without copying; valid only inside `body`.
    public func withBlob<R>(at column: Int32, _ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        if isNull(at: column) { return try body(nil) }
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let base = sqlite3_column_blob(handle, column) else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    public func value(at column: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(int64(at: column))
        case SQLITE_FLOAT: return .real(double(at: column))
        case SQLITE_TEXT: return .text(string(at: column) ?? "")
        case SQLITE_BLOB: return .blob(blob(at: column) ?? [])
        default: return .null
        }
    }
}
