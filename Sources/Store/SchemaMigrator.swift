import CSQLite

/// Brings a packd database to the current schema: MapLibre schema 6 plus packd's tables at
/// `PackdSchema.currentVersion`. Runs once at startup on the writer's connection, every step in
/// one transaction, so a crash mid-migration leaves the previous version intact.
public struct SchemaMigrator {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The file holds something else (tables but no MapLibre schema, or another version).
        case unsupportedMapLibreVersion(Int64)
        /// Written by a newer packd; never downgraded silently.
        case newerPackdVersion(Int64)

        public var description: String {
            switch self {
            case .unsupportedMapLibreVersion(let version):
                return "database has MapLibre schema version \(version), packd needs 6"
            case .newerPackdVersion(let version):
                return "database was written by a newer packd (schema \(version) > \(PackdSchema.currentVersion))"
            }
        }
    }

    public init() {}

    /// Opens (creating if needed) the database at `path` as the read-write connection, with
    /// packd's pragmas, migrated to the current version.
    ///
    /// `pageSize` applies only when the file is created (nil: SQLite's 4096, MapLibre's too).
    /// Larger pages cut the per-page WAL work for big tiles severalfold, at the cost of space:
    /// a row that fits in a page is stored whole in it, so rows just over half a page leave the
    /// rest of their page unused.
    public static func openWriter(path: String, pageSize: Int? = nil) throws -> Database {
        let database = try Database(path: path, mode: .readWriteCreate)
        // Both must precede the first table and the switch to WAL; no-ops on existing files.
        if let pageSize {
            guard isValidPageSize(pageSize) else {
                throw DatabaseError(code: SQLITE_MISUSE, message: "page size must be a power of two in 512...65536")
            }
            try database.execute("PRAGMA page_size = \(pageSize)")
        }
        try database.execute("PRAGMA auto_vacuum = INCREMENTAL")
        try database.applyStandardPragmas()
        try SchemaMigrator().migrate(database)
        return database
    }

    /// The page sizes SQLite accepts: a power of two from 512 to 65536.
    public static func isValidPageSize(_ size: Int) -> Bool {
        (512...65536).contains(size) && size & (size - 1) == 0
    }

    public func migrate(_ database: Database) throws {
        let userVersion = try database.scalarInt("PRAGMA user_version") ?? 0
        let tableCount = try database.scalarInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table'") ?? 0
        if userVersion == 0 && tableCount == 0 {
            try database.transaction {
                try database.execute(OfflineSchema.ddl)
                try database.execute("PRAGMA user_version = \(OfflineSchema.userVersion)")
            }
        } else if userVersion != OfflineSchema.userVersion {
            throw Failure.unsupportedMapLibreVersion(userVersion)
        }

        var version = try packdVersion(database)
        if version > PackdSchema.currentVersion { throw Failure.newerPackdVersion(version) }
        while version < PackdSchema.currentVersion {
            let step = PackdSchema.migrations[Int(version)]
            let next = version + 1
            try database.transaction {
                try database.execute(step)
                try database.execute(
                    "INSERT INTO packd_meta (key, value) VALUES ('schema_version', ?1) "
                        + "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [.integer(next)])
            }
            version = next
        }
    }

    /// 0 when packd has never migrated this file (no `packd_meta` yet).
    func packdVersion(_ database: Database) throws -> Int64 {
        let hasMeta = try database.scalarInt(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'packd_meta'") ?? 0
        guard hasMeta > 0 else { return 0 }
        return try database.scalarInt("SELECT value FROM packd_meta WHERE key = 'schema_version'") ?? 0
    }
}
