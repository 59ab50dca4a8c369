import CLibPQ
import Foundation

/// A failed PostgreSQL call with what is needed to diagnose it without a debugger, as GRDB's
/// errors carry the SQL: the SQLSTATE, the server's message, detail and hint, and the statement.
/// Never a password: libpq's connection errors do not contain it, and URLs are shown redacted.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The connection could not be made or was lost (SQLSTATE class 08 when the server said so).
        case connection
        /// The server refused a statement (`sqlState` says why).
        case server
        /// A result column had another type than the caller read it as, or bytes that do not decode.
        case decoding
        /// A call the connection cannot make in its state (e.g. a nested transaction).
        case misuse
    }

    public let kind: Kind
    /// The five-character SQLSTATE (`23505`, `40001`, …); nil for client-side failures.
    public let sqlState: String?
    public let message: String
    public let detail: String?
    public let hint: String?
    public let sql: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil,
                sql: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.sql = sql
    }

    /// The error a failed result carries (`PGRES_FATAL_ERROR`), or the connection's message
    /// when there is no result (the connection broke). An error the server sent always carries a
    /// SQLSTATE; one without was made by libpq itself, which happens when the connection broke
    /// ("server closed the connection unexpectedly" as PostgreSQL stops) even while the
    /// connection's status does not say so yet: it is a connection error, so callers reconnect.
    init(result: OpaquePointer?, connection: OpaquePointer?, sql: String?) {
        func field(_ code: Int32) -> String? {
            guard let result, let text = PQresultErrorField(result, code) else { return nil }
            return String(cString: text)
        }
        let state = field(packd_pg_diag_sqlstate)
        let primary = field(packd_pg_diag_message_primary)
        let message = primary ?? Self.connectionMessage(connection) ?? "unknown PostgreSQL error"
        let kind: Kind = state.map { $0.hasPrefix("08") } ?? true ? .connection : .server
        self.init(kind: kind, sqlState: state, message: message, detail: field(packd_pg_diag_message_detail),
                  hint: field(packd_pg_diag_message_hint), sql: sql)
    }

    /// libpq's message for `connection`, trimmed (it ends with a newline).
    static func connectionMessage(_ connection: OpaquePointer?) -> String? {
        guard let connection, let text = PQerrorMessage(connection) else { return nil }
        let message = String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
        return message.isEmpty ? nil : message
    }

    public var description: String {
        var text = "PostgreSQL "
        switch kind {
        case .connection: text += "connection error"
        case .server: text += "error"
        case .decoding: text += "decoding error"
        case .misuse: text += "misuse"
        }
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        if let detail { text += " (\(detail))" }
        if let hint { text += " hint: \(hint)" }
        if let sql { text += " — in `\(sql)`" }
        return text
    }

    // MARK: What callers branch on

    public var isUniqueViolation: Bool { sqlState == "23505" }
    public var isForeignKeyViolation: Bool { sqlState == "23503" }
    /// A serializable transaction or a deadlock lost: run the transaction again.
    public var isTransactionConflict: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// The server's disk is full (`53100`) or it is out of memory/connections (`53*`).
    public var isInsufficientResources: Bool { sqlState?.hasPrefix("53") == true }
    public var isStorageFull: Bool { sqlState == "53100" }
    /// The connection is gone (lost, or the server shut down: `57P01`…`57P03`); reconnect.
    public var isConnectionLost: Bool {
        kind == .connection || sqlState?.hasPrefix("08") == true || ["57P01", "57P02", "57P03"].contains(sqlState)
    }
    /// `statement_timeout` or a cancel request ended the statement.
    public var isCancelled: Bool { sqlState == "57014" }
}
