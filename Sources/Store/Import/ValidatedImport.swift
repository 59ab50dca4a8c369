import CSQLite
import Foundation
import Packs

/// An uploaded MapLibre offline database that passed every check and is safe to attach to the
/// writer: schema 6 exactly, no triggers or views, intact pages, plausible rows. Opened only
/// read-only, defensively, with untrusted schema code disabled. A schema-5 upload is upgraded in
/// a private copy (the upload itself is never written) which this value deletes when released.
public final class ValidatedImport: CheckedUpload {
    /// The file the merge attaches (the upload, or the upgraded copy).
    public let path: String
    /// The schema version the upload had (5 means it was upgraded).
    public let originalVersion: Int64
    private let ownsFile: Bool

    private init(path: String, originalVersion: Int64, ownsFile: Bool) {
        self.path = path
        self.originalVersion = originalVersion
        self.ownsFile = ownsFile
    }

    deinit {
        if ownsFile { try? FileManager.default.removeItem(atPath: path) }
    }

    /// `check` as `PackStore.checkUpload` answers it: every store imports MapLibre files, so
    /// every store checks them this one way.
    public static func checkUpload(path: String, limits: UploadLimits, scratchDirectory: String) -> Result<any CheckedUpload, ImportError> {
        Result { () throws(ImportError) -> any CheckedUpload in
            try check(path: path, limits: limits, scratchDirectory: scratchDirectory)
        }
    }

    /// Checks the file at `path`; `scratchDirectory` receives the upgraded copy of a schema-5
    /// file. Throws a precise `ImportError`; on success nothing has been written anywhere except
    /// that copy.
    public static func check(path: String, limits: UploadLimits = UploadLimits(), scratchDirectory: String) throws(ImportError) -> ValidatedImport {
        try SQLiteFileHeader.check(path: path, maximumBytes: limits.maximumBytes)
        let version = try withUntrustedConnection(path) { database throws(ImportError) in
            try userVersion(database)
        }
        switch version {
        case 6:
            try checkContents(path, version: 6, limits: limits)
            return ValidatedImport(path: path, originalVersion: 6, ownsFile: false)
        case 5:
            try checkContents(path, version: 5, limits: limits)
            // Named like the API's scratch files (`packd-PID-…`), which a later packd removes
            // when this process is gone.
            let copy = scratchDirectory + "/packd-\(getpid())-upgrade-\(UUID().uuidString).sqlite"
            do {
                try FileManager.default.copyItem(atPath: path, toPath: copy)
            } catch {
                throw .file("cannot copy the upload for upgrading: \(error)")
            }
            let upgraded = ValidatedImport(path: copy, originalVersion: 5, ownsFile: true)
            try upgradeFromVersion5(copy)
            try checkContents(copy, version: 6, limits: limits)
            return upgraded
        default:
            throw .unsupportedVersion(version)
        }
    }

    /// The schema, page integrity and row plausibility of a file whose header is already checked.
    private static func checkContents(_ path: String, version: Int64, limits: UploadLimits) throws(ImportError) {
        try withUntrustedConnection(path) { database throws(ImportError) in
            guard let shape = OfflineSchemaShape.version(version) else { throw .unsupportedVersion(version) }
            try shape.check(database, schema: "main")
            try run(database) {
                var problems: [String] = []
                try database.makeStatement("PRAGMA integrity_check(5)").forEachRow { row in
                    problems.append(row.string(at: 0) ?? "")
                }
                if problems != ["ok"] { throw ImportError.corrupt(problems.joined(separator: "; ")) }
                var danglingLinks = 0
                try database.makeStatement("PRAGMA foreign_key_check").forEachRow { _ in danglingLinks += 1 }
                if danglingLinks > 0 { throw ImportError.invalidRows("\(danglingLinks) links to missing rows") }
                for (what, sql) in OfflineRowChecks.queries {
                    let bad = try database.scalarInt(sql, [.integer(limits.maximumBlobBytes)]) ?? 0
                    if bad > 0 { throw ImportError.invalidRows("\(bad) \(what)") }
                }
            }
        }
    }

    /// The upload's region definitions, read through the same untrusted connection as the checks
    /// (the rows are text of bounded length: `OfflineRowChecks`).
    public func forEachRegionDefinition(_ body: (_ regionID: Int64, _ definition: String) -> Void) throws(ImportError) {
        try Self.withUntrustedConnection(path) { database throws(ImportError) in
            try Self.run(database) {
                try database.makeStatement("SELECT id, definition FROM regions ORDER BY id").forEachRow { row in
                    body(row.int64(at: 0), row.string(at: 1) ?? "")
                }
            }
        }
    }

    /// MapLibre's own 5 → 6 migration (`migrateToVersion6`), applied to the private copy.
    private static func upgradeFromVersion5(_ copy: String) throws(ImportError) {
        try run(nil) {
            let database = try Database(path: copy, mode: .readWrite)
            try database.setConfig(SQLITE_DBCONFIG_DEFENSIVE, true)
            try database.execute("PRAGMA trusted_schema = OFF")
            try database.transaction {
                try database.execute("ALTER TABLE resources ADD COLUMN must_revalidate INTEGER NOT NULL DEFAULT 0")
                try database.execute("ALTER TABLE tiles ADD COLUMN must_revalidate INTEGER NOT NULL DEFAULT 0")
                try database.execute("PRAGMA user_version = 6")
            }
        }
    }

    static func userVersion(_ database: Database) throws(ImportError) -> Int64 {
        var version: Int64 = 0
        try run(database) { version = try database.scalarInt("PRAGMA user_version") ?? 0 }
        return version
    }

    /// The URI that opens `path` read-only and immutable: SQLite takes no locks, writes no
    /// journal and ignores any -wal/-shm beside it, so a crafted companion file changes nothing.
    /// Falls back to the plain path when this SQLite was built without URI support (Debian's and
    /// Apple's have it); the connection is then still opened read-only.
    static func readOnlyURI(_ path: String) -> String {
        guard sqlite3_compileoption_used("USE_URI") == 1 else { return path }
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        let escaped = path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
        return "file:\(escaped)?mode=ro&immutable=1"
    }

    /// The checked upload opened for reading as an untrusted file (a store that cannot attach it,
    /// such as PostgreSQL, reads its rows through this).
    public func openForReading() throws(ImportError) -> Database {
        try Self.withUntrustedConnection(path) { $0 }
    }

    /// A connection to an untrusted file: read-only, defensive (no writable schema, no shadow
    /// table writes), no functions from the schema, query-only.
    private static func withUntrustedConnection<R>(_ path: String, _ body: (Database) throws(ImportError) -> R) throws(ImportError) -> R {
        let database: Database
        do {
            database = try Database(path: readOnlyURI(path), mode: .readOnly)
            try database.setConfig(SQLITE_DBCONFIG_DEFENSIVE, true)
            try database.execute("PRAGMA trusted_schema = OFF; PRAGMA query_only = ON; PRAGMA cell_size_check = ON")
        } catch {
            throw error.isCorrupt ? .notSQLite : .store(error.storeError)
        }
        return try body(database)
    }

    /// Runs SQLite work, mapping its errors to `ImportError` (damage is the client's file).
    static func run(_ database: Database?, _ body: () throws -> Void) throws(ImportError) {
        do {
            try body()
        } catch let error as ImportError {
            throw error
        } catch let error as DatabaseError {
            throw error.isCorrupt ? .corrupt(error.message) : .store(error.storeError)
        } catch {
            throw .file("\(error)")
        }
    }
}
