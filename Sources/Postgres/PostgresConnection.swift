import CLibPQ
import Glibc

/// One libpq connection, used blocking: every call waits for the server's answer. It belongs to
/// one thread at a time (a `PostgresConnectionThread`, a thread-pool job, a test); nothing here
/// may run on the loop thread. Statements go through a per-connection cache of prepared statements
/// keyed by SQL text and parameter types, parameters and results travel in binary.
public final class PostgresConnection: @unchecked Sendable {
    let handle: OpaquePointer
    /// The URL connected to, password redacted when printed.
    public let url: PostgresURL
    private var statements: [StatementKey: String] = [:]
    private var nextStatement = 0
    /// Transactions and savepoints open through `transaction`, naming the savepoints.
    private var transactionDepth = 0

    /// Beyond this many distinct statements, further ones run unnamed (prepared per call), so a
    /// caller building SQL dynamically cannot grow the server's memory without bound.
    public static let maximumCachedStatements = 256

    /// Connects (blocking; bounded by `connect_timeout`, 10 s unless the URL says otherwise).
    /// `applicationName` shows in `pg_stat_activity` unless the URL sets one.
    public init(url: PostgresURL, applicationName: String = "packd") throws(PostgresError) {
        let keywords = url.connectionKeywords(applicationName: applicationName)
        let connection = Self.connect(keywords)
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = PostgresError.connectionMessage(connection) ?? "could not connect"
            PQfinish(connection)
            throw PostgresError(kind: .connection, message: "\(url): \(message)")
        }
        handle = connection
        self.url = url
        // Notices (e.g. "relation already exists, skipping") would go to stderr; packd logs what
        // matters itself.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit {
        statements.removeAll()
        PQfinish(handle)
    }

    private static func connect(_ keywords: [(String, String)]) -> OpaquePointer? {
        let names = keywords.map { strdup($0.0) } + [nil]
        let values = keywords.map { strdup($0.1) } + [nil]
        defer {
            names.forEach { free($0) }
            values.forEach { free($0) }
        }
        return names.map { UnsafePointer($0) }.withUnsafeBufferPointer { namePointers in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valuePointers in
                PQconnectdbParams(namePointers.baseAddress, valuePointers.baseAddress, 0)
            }
        }
    }

    /// Has the server end this session when it sits idle inside a transaction for longer than
    /// `timeout`: a frozen or hung client would otherwise hold its row locks for good, and other
    /// clients skipping or waiting for them with it. The connection then reports itself broken
    /// (`isUsable`) and is made again.
    public func endIdleTransactions(after timeout: Duration) throws(PostgresError) {
        let milliseconds = max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        try execute("SET idle_in_transaction_session_timeout = \(milliseconds)")
    }

    /// False once the connection broke (the server went away); make a new one.
    public var isUsable: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The server's version as a number (150004 for 15.4).
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// The socket, for waiting on notifications with `poll` or a `uv_poll`.
    public var socket: Int32 { PQsocket(handle) }

    /// The server process serving this connection (`pg_backend_pid()`).
    public var backendProcessID: Int32 { PQbackendPID(handle) }

    // MARK: Statements

    /// Runs one or more `;`-separated statements without parameters (migrations), ignoring rows.
    public func execute(_ script: String) throws(PostgresError) {
        let result = PQexec(handle, script)
        defer { PQclear(result) }
        try check(result, sql: script)
    }

    /// Runs one statement with binary parameters and returns its rows in binary. Prepared once per
    /// connection (and parameter types) and reused, unless `cached` is false.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = [], cached: Bool = true) throws(PostgresError)
        -> PostgresRows
    {
        let types = parameters.map(\.type)
        let key = StatementKey(sql: sql, types: types)
        var name = statements[key]
        if name == nil, cached, statements.count < Self.maximumCachedStatements {
            let candidate = "packd_\(nextStatement)"
            nextStatement += 1
            let result = types.map(\.rawValue).withUnsafeBufferPointer { typePointer in
                PQprepare(handle, candidate, sql, Int32(types.count), typePointer.baseAddress)
            }
            defer { PQclear(result) }
            try check(result, sql: sql)
            statements[key] = candidate
            name = candidate
        }
        let encoded = try PostgresParameters(parameters)
        let result = encoded.withPointers { count, values, lengths, formats in
            if let name {
                return PQexecPrepared(handle, name, count, values, lengths, formats, 1)
            }
            return encoded.types.withUnsafeBufferPointer { typePointer in
                PQexecParams(handle, sql, count, typePointer.baseAddress, values, lengths, formats, 1)
            }
        }
        do {
            try check(result, sql: sql)
        } catch {
            PQclear(result)
            if let name, error.sqlState == "0A000" || error.sqlState == "26000" {
                // "cached plan must not change result type" after a schema change, or a
                // statement the server no longer knows: forget it so the next call prepares anew.
                statements[key] = nil
                PQclear(PQexec(handle, "DEALLOCATE \(name)"))
            }
            throw error
        }
        return PostgresRows(result: result!, sql: sql)
    }

    /// The first column of the first row as an integer (nil for no row or NULL).
    public func scalarInt(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> Int64? {
        let rows = try query(sql, parameters)
        return try rows.first?.int64OrNil(0)
    }

    /// The first column of the first row as text (nil for no row or NULL).
    public func scalarString(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> String? {
        let rows = try query(sql, parameters)
        return try rows.first?.stringOrNil(0)
    }

    private func check(_ result: OpaquePointer?, sql: String) throws(PostgresError) {
        switch result.map(PQresultStatus) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            throw PostgresError(result: result, connection: handle, sql: sql)
        }
    }

    private struct StatementKey: Hashable {
        let sql: String
        let types: [PostgresType]
    }

    // MARK: Transactions

    public enum Isolation: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    /// Whether a transaction is open on the server (also one opened by `execute("BEGIN")`).
    public var isInTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws. Inside
    /// another transaction, a savepoint (undone alone if `body` throws).
    @discardableResult
    public func transaction<R>(_ isolation: Isolation = .readCommitted, _ body: () throws -> R) throws -> R {
        if isInTransaction {
            let savepoint = "packd_savepoint_\(transactionDepth)"
            try execute("SAVEPOINT \(savepoint)")
            transactionDepth += 1
            defer { transactionDepth -= 1 }
            do {
                let result = try body()
                try execute("RELEASE SAVEPOINT \(savepoint)")
                return result
            } catch {
                if isUsable { try? execute("ROLLBACK TO SAVEPOINT \(savepoint); RELEASE SAVEPOINT \(savepoint)") }
                throw error
            }
        }
        try execute(isolation == .readCommitted ? "BEGIN" : "BEGIN ISOLATION LEVEL \(isolation.rawValue)")
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        let result: R
        do {
            result = try body()
        } catch {
            rollback()
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            rollback()
            throw error
        }
        return result
    }

    /// Rolls back an open transaction; never throws (a broken connection has none left).
    public func rollback() {
        guard isUsable, isInTransaction else { return }
        PQclear(PQexec(handle, "ROLLBACK"))
    }

    // MARK: Notifications

    /// `LISTEN channel` (the name quoted as an identifier).
    public func listen(_ channel: String) throws(PostgresError) {
        try execute("LISTEN \(try quotedIdentifier(channel))")
    }

    public func unlisten(_ channel: String) throws(PostgresError) {
        try execute("UNLISTEN \(try quotedIdentifier(channel))")
    }

    /// `pg_notify(channel, payload)`: delivered to listeners when the surrounding transaction
    /// commits (at once outside one). Payloads are at most 8000 bytes.
    public func notify(_ channel: String, payload: String) throws(PostgresError) {
        try query("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    /// Notifications that have arrived, without waiting (reads what the socket holds).
    public func pendingNotifications() throws(PostgresError) -> [PostgresNotification] {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(kind: .connection, message: PostgresError.connectionMessage(handle) ?? "connection lost")
        }
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(handle) {
            notifications.append(PostgresNotification(notify.pointee))
            PQfreemem(notify)
        }
        return notifications
    }

    /// Waits up to `timeout` for at least one notification; empty when none came.
    public func waitForNotifications(timeout: Duration) throws(PostgresError) -> [PostgresNotification] {
        var notifications = try pendingNotifications()
        guard notifications.isEmpty else { return notifications }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int32(clamping: max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        let ready = poll(&descriptor, 1, milliseconds)
        if ready > 0 { notifications = try pendingNotifications() }
        return notifications
    }

    /// `name` as a quoted SQL identifier (`PQescapeIdentifier`).
    public func quotedIdentifier(_ name: String) throws(PostgresError) -> String {
        guard let escaped = PQescapeIdentifier(handle, name, name.utf8.count) else {
            throw PostgresError(kind: .misuse, message: PostgresError.connectionMessage(handle) ?? "cannot quote identifier")
        }
        defer { PQfreemem(escaped) }
        return String(cString: escaped)
    }
}

/// A `NOTIFY` received by a listening connection.
public struct PostgresNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
    /// The server process of the connection that notified (`pg_backend_pid()`), e.g. to ignore
    /// one's own notifications.
    public let processID: Int32

    public init(channel: String, payload: String, processID: Int32) {
        self.channel = channel
        self.payload = payload
        self.processID = processID
    }

    init(_ notify: PGnotify) {
        self.init(channel: String(cString: notify.relname), payload: String(cString: notify.extra),
                  processID: notify.be_pid)
    }
}
