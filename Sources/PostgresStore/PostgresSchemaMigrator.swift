import Postgres

/// Brings a cluster database to `PostgresSchema.currentVersion`. Nodes starting together
/// serialise on an advisory lock, so the schema is migrated once; each step runs in one
/// transaction with its version bump, so a crash mid-migration leaves the previous version.
public struct PostgresSchemaMigrator: Sendable {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// Written by a newer packd; never downgraded silently.
        case newerVersion(Int)
        /// Schema `packd` exists but was not made by packd (no `packd_meta`).
        case foreignSchema

        public var description: String {
            switch self {
            case .newerVersion(let version):
                return "database was written by a newer packd (schema \(version) > \(PostgresSchema.currentVersion))"
            case .foreignSchema:
                return "the database has a schema \"\(PostgresSchema.name)\" packd did not create"
            }
        }
    }

    public init() {}

    /// Migrates through `connection` and leaves it using the schema (`search_path`).
    public func migrate(_ connection: PostgresConnection) throws {
        try connection.query("SELECT pg_advisory_lock($1::int4, $2::int4)",
                             [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.migration.rawValue))])
        defer {
            _ = try? connection.query("SELECT pg_advisory_unlock($1::int4, $2::int4)",
                                      [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.migration.rawValue))])
        }
        let schema = try connection.quotedIdentifier(PostgresSchema.name)
        var version = try Self.version(connection)
        if version > PostgresSchema.currentVersion { throw Failure.newerVersion(version) }
        try Self.use(connection)
        while version < PostgresSchema.currentVersion {
            let next = version + 1
            try connection.transaction {
                if version == 0 { try connection.execute("CREATE SCHEMA IF NOT EXISTS \(schema)") }
                try connection.execute(PostgresSchema.migrations[version])
                try connection.query("""
                    INSERT INTO packd_meta (key, value) VALUES ('schema_version', $1)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, [.text(String(next))])
            }
            version = next
        }
    }

    /// Puts packd's schema first on `connection`'s `search_path` (every store connection does
    /// this once after connecting).
    public static func use(_ connection: PostgresConnection) throws {
        try connection.execute("SET search_path TO \(try connection.quotedIdentifier(PostgresSchema.name)), pg_catalog")
    }

    /// The version the database is at (0 before the first migration); throws `foreignSchema`
    /// when schema `packd` exists without packd's bookkeeping.
    public static func version(_ connection: PostgresConnection) throws -> Int {
        let tables = try connection.query("""
            SELECT count(*), count(*) FILTER (WHERE tablename = 'packd_meta') FROM pg_tables WHERE schemaname = $1
            """, [.text(PostgresSchema.name)])
        let (count, meta) = (try tables.first?.int64(0) ?? 0, try tables.first?.int64(1) ?? 0)
        // No table yet (no schema, or an empty one made by hand for packd): a new database.
        if count == 0 { return 0 }
        guard meta == 1 else { throw Failure.foreignSchema }
        let schema = try connection.quotedIdentifier(PostgresSchema.name)
        return Int(try connection.scalarString("SELECT value FROM \(schema).packd_meta WHERE key = 'schema_version'") ?? "0") ?? 0
    }
}
