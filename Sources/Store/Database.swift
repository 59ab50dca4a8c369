import CSQLite

/// One SQLite connection (GRDB's `Database`): opened with explicit flags and pragmas, with a cache
/// of prepared statements keyed by SQL text. Not thread-safe by design: a connection belongs to
/// one thread (the `WriterThread`, or one reader at a time), which is what makes the statement
/// cache and `changes` meaningful. SQLite's own mutexes are off (`SQLITE_OPEN_NOMUTEX`) for that
/// reason.
public final class Database {
    public enum Mode: Sendable {
        /// Creates the file if missing; the writer's mode.
        case readWriteCreate
        case readWrite
        /// Queries and exports; also the first step of opening untrusted imports.
        case readOnly

        var flags: Int32 {
            let base = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
            switch self {
            case .readWriteCreate: return base | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
            case .readWrite: return base | SQLITE_OPEN_READWRITE
            case .readOnly: return base | SQLITE_OPEN_READONLY
            }
        }
    }

    let handle: OpaquePointer
    public let path: String
    public let mode: Mode
    private var statements: [String: Statement] = [:]
    private let busyTimeout: Int32
    /// False once `close()` ran: the handle is SQLite's no longer.
    public private(set) var isOpen = true

    /// Opens `path`. `busyTimeoutMilliseconds` bounds how long a reader waits for a WAL
    /// checkpoint or the writer for a reader; never infinite, so a stuck peer surfaces as
    /// `SQLITE_BUSY` instead of a hang.
    public init(path: String, mode: Mode, busyTimeoutMilliseconds: Int32 = 5_000) throws(DatabaseError) {
        var handle: OpaquePointer?
        let result = sqlite3_open_v2(path, &handle, mode.flags, nil)
        guard result == SQLITE_OK, let handle else {
            let error = DatabaseError(result: result, connection: handle, sql: nil)
            sqlite3_close_v2(handle)
            throw error
        }
        self.handle = handle
        self.path = path
        self.mode = mode
        busyTimeout = busyTimeoutMilliseconds
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
    }

    deinit {
        close()
    }

    /// Closes the connection now rather than when the object goes (`sqlite3_close_v2`: a statement
    /// a caller still holds keeps SQLite's side alive until it is finalized). The last connection
    /// to a WAL database to close checkpoints the log and removes `-wal` and `-shm`, if it may
    /// write. Idempotent; after it, statements are refused (`closedError`) and nothing else here
    /// may be called. On the connection's thread, as every call.
    public func close() {
        guard isOpen else { return }
        isOpen = false
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// What a statement on a closed connection throws.
    public var closedError: DatabaseError {
        DatabaseError(code: SQLITE_MISUSE, message: "the database connection to \(path) is closed")
    }

    /// The pragmas every packd connection uses: WAL so readers never block the writer,
    /// `synchronous = NORMAL` (durable at checkpoints, never corrupt: a crash loses at most the
    /// last commits, which progress never reported), and enforced foreign keys.
    public func applyStandardPragmas() throws(DatabaseError) {
        if mode != .readOnly {
            try execute("PRAGMA journal_mode = WAL")
        }
        try execute("PRAGMA synchronous = NORMAL")
        try execute("PRAGMA foreign_keys = ON")
    }

    // MARK: Executing

    /// Runs one or more statements separated by semicolons, ignoring any rows they return.
    public func execute(_ sql: String) throws(DatabaseError) {
        guard isOpen else { throw closedError }
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result))
            sqlite3_free(message)
            throw DatabaseError(code: result, extendedCode: sqlite3_extended_errcode(handle), message: text, sql: sql)
        }
    }

    /// Runs one statement with arguments through the statement cache.
    public func execute(_ sql: String, _ arguments: [DatabaseValue]) throws(DatabaseError) {
        try cachedStatement(sql).execute(arguments)
    }

    /// A prepared statement for `sql`, prepared once per connection and reused.
    public func cachedStatement(_ sql: String) throws(DatabaseError) -> Statement {
        guard isOpen else { throw closedError }
        if let statement = statements[sql] { return statement }
        let statement = try Statement(database: self, sql: sql)
        statements[sql] = statement
        return statement
    }

    /// A fresh statement that is not cached (for one-off or dynamically built SQL).
    public func makeStatement(_ sql: String) throws(DatabaseError) -> Statement {
        guard isOpen else { throw closedError }
        return try Statement(database: self, sql: sql)
    }

    /// The first column of the first row as an integer (nil for no row or NULL).
    public func scalarInt(_ sql: String, _ arguments: [DatabaseValue] = []) throws(DatabaseError) -> Int64? {
        try cachedStatement(sql).scalarInt(arguments)
    }

    /// The first column of the first row as text (nil for no row or NULL).
    public func scalarString(_ sql: String, _ arguments: [DatabaseValue] = []) throws(DatabaseError) -> String? {
        let statement = try cachedStatement(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        return try statement.step() ? statement.string(at: 0) : nil
    }

    /// Rows changed by the last INSERT/UPDATE/DELETE on this connection.
    public var changes: Int { Int(sqlite3_changes64(handle)) }
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    public var isInTransaction: Bool { isOpen && sqlite3_get_autocommit(handle) == 0 }

    /// Makes the statements running on this connection stop with `SQLITE_INTERRUPT` as soon as
    /// they can (`sqlite3_interrupt`; one that starts after every statement ended runs normally).
    /// The one call allowed from another thread — while the caller knows the connection stays
    /// open until it returns.
    public func interrupt() {
        sqlite3_interrupt(handle)
    }

    // MARK: Transactions

    public enum TransactionKind: String, Sendable {
        case deferred = "DEFERRED"
        /// Takes the write lock at BEGIN, so a busy database fails fast instead of at COMMIT.
        case immediate = "IMMEDIATE"
        case exclusive = "EXCLUSIVE"
    }

    /// Runs `body` inside a transaction: committed when it returns, rolled back when it throws.
    public func transaction<R>(_ kind: TransactionKind = .immediate, _ body: () throws -> R) throws -> R {
        // Inside another transaction (a route grouping several store operations that each keep
        // themselves atomic), a savepoint: SQLite has no nested BEGIN.
        if isInTransaction { return try savepoint(body) }
        try cachedStatement("BEGIN \(kind.rawValue) TRANSACTION").execute()
        let result: R
        do {
            result = try body()
        } catch {
            rollback()
            throw error
        }
        do {
            try cachedStatement("COMMIT TRANSACTION").execute()
        } catch {
            rollback()
            throw error
        }
        return result
    }

    /// `body` inside a savepoint of the open transaction: undone alone if it throws.
    private func savepoint<R>(_ body: () throws -> R) throws -> R {
        try cachedStatement("SAVEPOINT packd_nested").execute()
        do {
            let result = try body()
            try cachedStatement("RELEASE SAVEPOINT packd_nested").execute()
            return result
        } catch {
            if isInTransaction {
                sqlite3_exec(handle, "ROLLBACK TO SAVEPOINT packd_nested", nil, nil, nil)
                sqlite3_exec(handle, "RELEASE SAVEPOINT packd_nested", nil, nil, nil)
            }
            throw error
        }
    }

    /// Rolls back if a transaction is open. SQLite may already have rolled back on its own
    /// (e.g. after SQLITE_FULL), so this never throws.
    public func rollback() {
        if isInTransaction { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
    }

    // MARK: Configuration

    /// `sqlite3_db_config` for integer options such as `SQLITE_DBCONFIG_DEFENSIVE`.
    public func setConfig(_ option: Int32, _ value: Bool) throws(DatabaseError) {
        guard isOpen else { throw closedError }
        var out: Int32 = 0
        try check(packd_sqlite3_db_config_int(handle, option, value ? 1 : 0, &out), handle)
    }

    /// Caps how large the file may grow (SQLite answers SQLITE_FULL beyond it).
    public func setMaximumPageCount(_ pages: Int64) throws(DatabaseError) {
        try execute("PRAGMA max_page_count = \(pages)")
    }

    /// Copies the write-ahead log into the database and truncates it to zero bytes, giving the
    /// file system back what it held; waits at most `busyTimeoutMilliseconds` for readers on an
    /// older snapshot (the connection's own timeout is restored after). False when it could not.
    @discardableResult
    public func truncateWriteAheadLog(busyTimeoutMilliseconds: Int32 = 100) -> Bool {
        guard isOpen else { return false }
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
        defer { sqlite3_busy_timeout(handle, busyTimeout) }
        return sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil) == SQLITE_OK
    }

    /// Releases the cached statements (finalized unless the caller still holds one), e.g.
    /// before detaching a database they refer to.
    public func finalizeStatements() {
        statements.removeAll()
    }
}
