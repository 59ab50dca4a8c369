/// Why an uploaded offline database was refused or could not be merged. Every case but
/// `database` and `file` is the client's fault (the API answers 4xx with `description`); in all
/// cases nothing was merged.
public enum ImportError: Error, CustomStringConvertible, Sendable, Equatable {
    case tooLarge(size: UInt64, limit: UInt64)
    case notSQLite
    /// The file is shorter than its own header says, or SQLite finds damaged pages.
    case corrupt(String)
    /// `user_version` other than 6 (or 5, which is upgraded in a copy).
    case unsupportedVersion(Int64)
    /// Tables, indexes or columns other than MapLibre's schema.
    case unexpectedSchema(String)
    /// Triggers and views run code on read/write: never accepted.
    case triggersOrViews([String])
    /// Rows whose values MapLibre could not have written (wrong types, zooms out of range, …).
    case invalidRows(String)
    /// Merging would link more distinct tiles than the configured global tile limit.
    case tileLimitExceeded(tiles: Int64, limit: Int64)
    case database(DatabaseError)
    case file(String)

    public var isClientError: Bool {
        switch self {
        case .database, .file: return false
        default: return true
        }
    }

    public var description: String {
        switch self {
        case .tooLarge(let size, let limit): return "import of \(size) bytes exceeds the limit of \(limit) bytes"
        case .notSQLite: return "not an SQLite database"
        case .corrupt(let detail): return "damaged or truncated database: \(detail)"
        case .unsupportedVersion(let version):
            return "MapLibre offline schema version \(version) is not supported (5 and 6 are)"
        case .unexpectedSchema(let detail): return "not a MapLibre offline database: \(detail)"
        case .triggersOrViews(let names): return "database contains triggers or views: \(names.joined(separator: ", "))"
        case .invalidRows(let detail): return "invalid rows: \(detail)"
        case .tileLimitExceeded(let tiles, let limit):
            return "importing would store \(tiles) pack tiles, more than the limit of \(limit)"
        case .database(let error): return error.description
        case .file(let message): return message
        }
    }

    public static func == (lhs: ImportError, rhs: ImportError) -> Bool {
        lhs.description == rhs.description
    }
}
