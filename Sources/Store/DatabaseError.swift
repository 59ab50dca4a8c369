import CSQLite
import Packs

/// A failed SQLite call, with everything needed to diagnose it without a debugger: the primary
/// and extended result codes, SQLite's own message and the statement that failed.
public struct DatabaseError: Error, CustomStringConvertible, Sendable {
    /// Primary result code (`SQLITE_BUSY`, `SQLITE_FULL`, …), what callers branch on.
    public let code: Int32
    /// Extended result code, for logs (it distinguishes e.g. `SQLITE_IOERR_WRITE`).
    public let extendedCode: Int32
    public let message: String
    public let sql: String?

    public init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
        self.code = code & 0xFF
        self.extendedCode = extendedCode ?? code
        self.message = message
        self.sql = sql
    }

    /// Reads the error state of `connection` right after a failed call returned `result`.
    init(result: Int32, connection: OpaquePointer?, sql: String?) {
        let message: String
        if let connection, let text = sqlite3_errmsg(connection) {
            message = String(cString: text)
        } else {
            message = String(cString: sqlite3_errstr(result))
        }
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? result
        self.init(code: result, extendedCode: extended, message: message, sql: sql)
    }

    /// The disk (or the configured size cap) is full: packs fail with `storage_full`.
    public var isStorageFull: Bool { code == SQLITE_FULL }
    /// Not a database, or a damaged one: never retried.
    public var isCorrupt: Bool { code == SQLITE_NOTADB || code == SQLITE_CORRUPT }

    public var description: String {
        var text = "SQLite error \(code) (extended \(extendedCode)): \(message)"
        if let sql { text += " — in `\(sql)`" }
        return text
    }
}

/// Throws a `DatabaseError` unless `result` is one of the `accepted` codes.
@inline(__always)
func check(_ result: Int32, _ connection: OpaquePointer?, sql: String? = nil, accepting accepted: Int32 = SQLITE_OK) throws(DatabaseError) {
    if result != accepted { throw DatabaseError(result: result, connection: connection, sql: sql) }
}

extension DatabaseError {
    /// The store-neutral form callers outside Store act on.
    public var storeError: StoreError {
        StoreError(isStorageFull ? .storageFull : isCorrupt ? .corrupt : .other, description)
    }
}
