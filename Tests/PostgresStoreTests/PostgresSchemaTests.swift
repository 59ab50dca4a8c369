import Foundation
import Postgres
import PostgresStore
import PostgresTestSupport
import Testing

@Suite struct PostgresSchemaTests {
    /// Nodes starting at once migrate the schema once (an advisory lock), and again is a no-op.
    @Test func concurrentMigrationsMigrateOnce() throws {
        let url = try TemporaryPostgres.shared().makeDatabase(prefix: "migrate")
        try concurrently(4) { _ in
            let connection = try PostgresConnection(url: url)
            try PostgresSchemaMigrator().migrate(connection)
            #expect(try PostgresSchemaMigrator.version(connection) == PostgresSchema.currentVersion)
        }
        let connection = try PostgresConnection(url: url)
        try PostgresSchemaMigrator().migrate(connection)
        #expect(try connection.scalarString("SELECT value FROM packd.packd_meta WHERE key = 'schema_version'")
            == String(PostgresSchema.currentVersion))
        // Everything lives in schema packd; nothing in public.
        #expect(try connection.scalarInt("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == 0)
        // 16 tables, the 4 of webhooks (endpoints, messages, deliveries, attempts), the 3 of
        // versions (versions, resource changes, tile changes) and the archives' agreed versions.
        #expect(try connection.scalarInt("SELECT count(*) FROM pg_tables WHERE schemaname = 'packd'") == 24)
    }

    @Test func refusesNewerAndForeignSchemas() throws {
        let server = try TemporaryPostgres.shared()
        let newer = try PostgresConnection(url: server.makeDatabase(prefix: "newer"))
        try PostgresSchemaMigrator().migrate(newer)
        try newer.query("UPDATE packd_meta SET value = $1 WHERE key = 'schema_version'", [.text(String(PostgresSchema.currentVersion + 1))])
        #expect(throws: PostgresSchemaMigrator.Failure.newerVersion(PostgresSchema.currentVersion + 1)) {
            try PostgresSchemaMigrator().migrate(PostgresConnection(url: newer.url))
        }

        let foreign = try PostgresConnection(url: server.makeDatabase(prefix: "foreign"))
        try foreign.execute("CREATE SCHEMA packd; CREATE TABLE packd.resources (id int)")
        #expect(throws: PostgresSchemaMigrator.Failure.foreignSchema) { try PostgresSchemaMigrator().migrate(foreign) }
        #expect(try foreign.scalarInt("SELECT count(*) FROM pg_tables WHERE schemaname = 'packd'") == 1)
    }

    /// Tile and resource bodies are stored out of line uncompressed: they are compressed already.
    @Test func bodiesAreStoredExternalUncompressed() throws {
        let database = try ClusterDatabase("storage")
        let connection = try database.connect()
        let storage = try connection.query("""
            SELECT c.relname, a.attstorage::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'packd' AND a.attname = 'data' AND c.relname IN ('resources', 'tiles') ORDER BY c.relname
            """)
        let columns = try storage.map { [try $0.string(0), try $0.string(1)] }
        #expect(columns == [["resources", "e"], ["tiles", "e"]])

        // A compressible 100 KB body keeps its full size on disk: no TOAST compression.
        let template = try connection.query("INSERT INTO tile_templates (url_template) VALUES ($1) RETURNING id",
                                            ["http://t/{z}/{x}/{y}"]).first!.int64(0)
        try connection.query("""
            INSERT INTO tiles (template_id, pixel_ratio, z, y, x, data, accessed) VALUES ($1, 1, 0, 0, 0, $2, 0)
            """, [.int8(template), .bytea([UInt8](repeating: 7, count: 100_000))])
        #expect(try connection.scalarInt("SELECT pg_column_size(data)::int8 FROM tiles") ?? 0 >= 100_000)
    }

    /// The constraints that keep units coherent reject a leased unit without an owner.
    @Test func unitRowsMustBeCoherent() throws {
        let database = try ClusterDatabase("coherent")
        let connection = try database.connect()
        let pack = try database.insertPack(on: connection)
        let invalid = #expect(throws: PostgresError.self) {
            try connection.query("""
                INSERT INTO packd_work_units (pack_id, ordinal, kind, tiles, state) VALUES ($1, 0, 0, 0, 'leased')
                """, [.int8(pack)])
        }
        #expect(invalid?.sqlState == "23514")
        #expect(throws: PostgresError.self) {
            try connection.query("INSERT INTO packd_work_units (pack_id, ordinal, kind, pyramid, tiles) VALUES ($1, 0, 0, 3, 0)",
                                 [.int8(pack)])
        }
    }
}
