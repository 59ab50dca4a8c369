import Foundation
import Postgres
import PostgresTestSupport
import Testing

/// The libpq layer against a real server: one per test process, a database per test.
@Suite struct PostgresConnectionTests {
    let server: TemporaryPostgres
    let url: PostgresURL

    init() throws {
        server = try TemporaryPostgres.shared()
        url = try server.makeDatabase(prefix: "connection")
    }

    @Test func binaryParametersRoundTrip() throws {
        let connection = try PostgresConnection(url: url)
        let body: [UInt8] = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) } + [0, 0, 255]
        let rows = try connection.query(
            "SELECT $1::int8, $2::text, $3::bytea, $4::bool, $5::float8, $6::int8, length($3::bytea), $7::text",
            [.int8(-9_007_199_254_740_993), .text("zoé \u{1F5FA} '\"\\"), .bytea(body), .bool(true), .float8(-0.125),
             .null, .text("")])
        let row = try #require(rows.first)
        #expect(try row.int64(0) == -9_007_199_254_740_993)
        #expect(try row.string(1) == "zoé \u{1F5FA} '\"\\")
        #expect(try row.bytes(2) == body)
        #expect(try row.bool(3))
        #expect(try row.doubleOrNil(4) == -0.125)
        #expect(try row.int64OrNil(5) == nil)
        #expect(try row.isNull(5))
        #expect(try row.int64(6) == Int64(body.count))
        #expect(try row.string(7) == "")
        #expect(rows.columnType(0) == .int8)
        #expect(rows.columnType(2) == .bytea)
    }

    @Test func arraysCarryABatch() throws {
        let connection = try PostgresConnection(url: url)
        try connection.execute("CREATE TABLE bodies (id int8 PRIMARY KEY, name text, data bytea, fresh bool)")
        let ids: [Int64?] = [1, 2, 3, 4]
        let names: [String?] = ["a", nil, "ç", ""]
        let data: [[UInt8]?] = [[1, 2, 3], nil, [], Array(repeating: 9, count: 5000)]
        let fresh: [Bool?] = [true, false, nil, true]
        let inserted = try connection.query(
            "INSERT INTO bodies SELECT * FROM unnest($1::int8[], $2::text[], $3::bytea[], $4::bool[])",
            [.int8Array(ids), .textArray(names), .byteaArray(data), .boolArray(fresh)])
        #expect(inserted.affectedRows == 4)
        let rows = try connection.query("SELECT id, name, data, fresh FROM bodies WHERE id = ANY($1) ORDER BY id",
                                        [.int8Array([4, 2, 1, 3])])
        #expect(rows.count == 4)
        for (index, row) in rows.enumerated() {
            #expect(try row.int64(0) == ids[index])
            #expect(try row.stringOrNil(1) == names[index])
            #expect(try row.bytesOrNil(2) == data[index])
            #expect(try row.boolOrNil(3) == fresh[index])
        }
        let empty = try connection.query("SELECT count(*) FROM bodies WHERE id = ANY($1)", [.int8Array([])])
        #expect(try empty.first?.int64(0) == 0)
    }

    @Test func errorsCarrySQLStateAndSQL() throws {
        let connection = try PostgresConnection(url: url)
        try connection.execute("CREATE TABLE unique_urls (url text PRIMARY KEY)")
        try connection.query("INSERT INTO unique_urls VALUES ($1)", ["https://a/1"])
        let duplicate = #expect(throws: PostgresError.self) {
            try connection.query("INSERT INTO unique_urls VALUES ($1)", ["https://a/1"])
        }
        #expect(duplicate?.isUniqueViolation == true)
        #expect(duplicate?.kind == .server)
        #expect(duplicate?.sql == "INSERT INTO unique_urls VALUES ($1)")
        #expect(duplicate?.detail?.contains("already exists") == true)
        #expect("\(duplicate!)".contains("23505"))

        let syntax = #expect(throws: PostgresError.self) { try connection.execute("SELEC 1") }
        #expect(syntax?.sqlState == "42601")
        #expect(syntax?.sql == "SELEC 1")
        // The connection stays usable after a failed statement.
        #expect(try connection.scalarInt("SELECT 41 + $1", [1]) == 42)
    }

    @Test func decodingMismatchesThrowInsteadOfTrapping() throws {
        let connection = try PostgresConnection(url: url)
        let rows = try connection.query("SELECT 'text'::text, NULL::int8, 1.5::numeric, 7::int4, 3::int2")
        let row = try #require(rows.first)
        let mismatch = #expect(throws: PostgresError.self) { try row.int64(0) }
        #expect(mismatch?.kind == .decoding)
        #expect(mismatch?.sql?.contains("'text'::text") == true)
        #expect(throws: PostgresError.self) { try row.int64(1) }
        #expect(throws: PostgresError.self) { try row.int64(2) }
        #expect(throws: PostgresError.self) { try row.string(9) }
        #expect(try row.int64(3) == 7)
        #expect(try row.int64(4) == 3)
    }

    @Test func transactionsCommitAndRollBack() throws {
        let connection = try PostgresConnection(url: url)
        try connection.execute("CREATE TABLE counters (id int8 PRIMARY KEY, value int8 NOT NULL)")
        try connection.transaction {
            try connection.query("INSERT INTO counters VALUES (1, 10)")
        }
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try connection.transaction {
                try connection.query("UPDATE counters SET value = 99 WHERE id = 1")
                throw Abandon()
            }
        }
        #expect(!connection.isInTransaction)
        #expect(try connection.scalarInt("SELECT value FROM counters WHERE id = 1") == 10)

        // A nested transaction is a savepoint: its failure undoes it alone.
        try connection.transaction {
            try connection.query("UPDATE counters SET value = 11 WHERE id = 1")
            _ = try? connection.transaction {
                try connection.query("INSERT INTO counters VALUES (1, 0)")  // duplicate key
            }
            try connection.query("INSERT INTO counters VALUES (2, 20)")
        }
        #expect(try connection.scalarInt("SELECT sum(value)::int8 FROM counters") == 31)

        // A failed COMMIT (deferred constraint) rolls back and reports it.
        try connection.execute("""
            CREATE TABLE parents (id int8 PRIMARY KEY);
            CREATE TABLE children (parent int8 REFERENCES parents(id) DEFERRABLE INITIALLY DEFERRED)
            """)
        let commit = #expect(throws: PostgresError.self) {
            try connection.transaction { try connection.query("INSERT INTO children VALUES (7)") }
        }
        #expect(commit?.isForeignKeyViolation == true)
        #expect(!connection.isInTransaction)
    }

    @Test func otherConnectionsSeeOnlyCommittedWork() throws {
        let writer = try PostgresConnection(url: url)
        let reader = try PostgresConnection(url: url)
        try writer.execute("CREATE TABLE seen (id int8)")
        try writer.execute("BEGIN")
        try writer.query("INSERT INTO seen VALUES (1)")
        #expect(try reader.scalarInt("SELECT count(*) FROM seen") == 0)
        try writer.execute("COMMIT")
        #expect(try reader.scalarInt("SELECT count(*) FROM seen") == 1)
    }

    @Test func preparedStatementsSurviveSchemaChanges() throws {
        let connection = try PostgresConnection(url: url)
        try connection.execute("CREATE TABLE shapes (a int8)")
        try connection.query("INSERT INTO shapes VALUES (1)")
        #expect(try connection.query("SELECT * FROM shapes").columnCount == 1)
        try connection.execute("ALTER TABLE shapes ADD COLUMN b int8")
        // The cached plan's result type changed: one failure at most, then it is prepared anew.
        let first = try? connection.query("SELECT * FROM shapes").columnCount
        let columns = try first ?? connection.query("SELECT * FROM shapes").columnCount
        #expect(columns == 2)
        // Different parameter types are different prepared statements.
        #expect(try connection.scalarString("SELECT pg_typeof($1)::text", [.int8(1)]) == "bigint")
        #expect(try connection.scalarString("SELECT pg_typeof($1)::text", [.text("x")]) == "text")
        #expect(try connection.scalarString("SELECT pg_typeof($1)::text", [.bytea([1])]) == "bytea")
    }

    @Test func notificationsReachListeners() throws {
        let listener = try PostgresConnection(url: url, applicationName: "listener")
        let notifier = try PostgresConnection(url: url)
        try listener.listen("packd events")
        #expect(try listener.pendingNotifications().isEmpty)
        try notifier.transaction {
            try notifier.notify("packd events", payload: "42")
            try notifier.notify("packd events", payload: "43")
            // Not delivered before the commit.
            #expect(try listener.waitForNotifications(timeout: .milliseconds(50)).isEmpty)
        }
        var received: [PostgresNotification] = []
        let deadline = Date().addingTimeInterval(30)
        while received.count < 2, Date() < deadline {
            received += try listener.waitForNotifications(timeout: .seconds(1))
        }
        #expect(received.map(\.payload) == ["42", "43"])
        #expect(received.allSatisfy { $0.channel == "packd events" && $0.processID == notifier.backendProcessID })
        try listener.unlisten("packd events")
        try notifier.notify("packd events", payload: "44")
        #expect(try listener.waitForNotifications(timeout: .milliseconds(100)).isEmpty)
    }

    @Test func applicationNameIsSet() throws {
        let connection = try PostgresConnection(url: url, applicationName: "packd node-7")
        #expect(try connection.scalarString("SELECT current_setting('application_name')") == "packd node-7")
        let named = try PostgresConnection(url: PostgresURL(url.description + "?application_name=from-url"))
        #expect(try named.scalarString("SELECT current_setting('application_name')") == "from-url")
    }

    @Test func connectionFailuresAreConnectionErrorsWithoutThePassword() throws {
        let missing = #expect(throws: PostgresError.self) {
            try PostgresConnection(url: PostgresURL(url.with(database: "no_such_database").description))
        }
        #expect(missing?.kind == .connection)
        #expect(missing?.isConnectionLost == true)
        #expect("\(missing!)".contains("no_such_database"))

        let refused = #expect(throws: PostgresError.self) {
            try PostgresConnection(url: PostgresURL("postgresql://u:topsecret@%2Fnonexistent%2Fdir:5432/db"))
        }
        #expect(refused?.kind == .connection)
        #expect(!"\(refused!)".contains("topsecret"))
    }

    @Test func aTerminatedSessionIsReportedAsLost() throws {
        let victim = try PostgresConnection(url: url)
        let killer = try PostgresConnection(url: url)
        #expect(try killer.scalarInt("SELECT count(*) FROM pg_terminate_backend($1::int4, 30000) AS t WHERE t", [.int8(Int64(victim.backendProcessID))]) == 1)
        let lost = #expect(throws: PostgresError.self) { try victim.query("SELECT 1") }
        #expect(lost?.isConnectionLost == true)
        #expect(!victim.isUsable)
    }
}
