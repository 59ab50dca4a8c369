import CSQLite
import Testing
@testable import Store

@Suite struct DatabaseTests {
    @Test func schemaIsMapLibreSixWithPackdTablesAndPragmas() throws {
        let directory = TemporaryDirectory()
        let database = try SchemaMigrator.openWriter(path: directory.file("packd.db"))
        #expect(try database.scalarInt("PRAGMA user_version") == 6)
        #expect(try database.scalarInt("PRAGMA auto_vacuum") == 2)
        #expect(try database.scalarInt("PRAGMA foreign_keys") == 1)
        #expect(try database.scalarInt("PRAGMA synchronous") == 1)
        let journal = try database.cachedStatement("PRAGMA journal_mode")
        try journal.bind([])
        #expect(try journal.step())
        #expect(journal.string(at: 0) == "wal")
        journal.reset()

        var names: Set<String> = []
        try database.cachedStatement("SELECT name FROM sqlite_schema WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'")
            .forEachRow { names.insert($0.string(at: 0) ?? "") }
        #expect(OfflineSchema.tableNames.isSubset(of: names))
        #expect(OfflineSchema.indexNames.isSubset(of: names))
        for table in ["packd_meta", "packd_packs", "packd_progress", "packd_events", "packd_errors", "packd_idempotency"] {
            #expect(names.contains(table), "missing \(table)")
        }
        #expect(try SchemaMigrator().packdVersion(database) == PackdSchema.currentVersion)
    }

    @Test func reopeningKeepsDataAndVersion() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("packd.db")
        do {
            let database = try SchemaMigrator.openWriter(path: path)
            try database.execute("INSERT INTO regions (definition, description) VALUES ('{}', NULL)")
        }
        let database = try SchemaMigrator.openWriter(path: path)
        #expect(try database.scalarInt("SELECT count(*) FROM regions") == 1)
        #expect(try SchemaMigrator().packdVersion(database) == PackdSchema.currentVersion)
    }

    @Test func refusesForeignSchemaVersion() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("other.db")
        do {
            let database = try Database(path: path, mode: .readWriteCreate)
            try database.execute("CREATE TABLE t (x); PRAGMA user_version = 5")
        }
        #expect(throws: SchemaMigrator.Failure.unsupportedMapLibreVersion(5)) {
            _ = try SchemaMigrator.openWriter(path: path)
        }
    }

    @Test func blobsTextAndNullRoundTrip() throws {
        let directory = TemporaryDirectory()
        let database = try Database(path: directory.file("values.db"), mode: .readWriteCreate)
        try database.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, b BLOB, t TEXT, i INTEGER)")
        let bytes: [UInt8] = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) } + [0, 0]
        try database.execute("INSERT INTO v VALUES (1, ?1, ?2, ?3)", [.blob(bytes), .text("héllo\u{0}x"), .integer(Int64.min)])
        try database.execute("INSERT INTO v VALUES (2, ?1, ?2, ?3)", [.blob([]), .text(""), .null])
        let select = try database.cachedStatement("SELECT b, t, i, typeof(b), typeof(t) FROM v WHERE id = ?1")
        try select.bind([.integer(1)])
        #expect(try select.step())
        #expect(select.blob(at: 0) == bytes)
        #expect(select.string(at: 1) == "héllo\u{0}x")
        #expect(select.int64(at: 2) == Int64.min)
        try select.bind([.integer(2)])
        #expect(try select.step())
        #expect(select.blob(at: 0) == [])
        #expect(select.string(at: 3) == "blob")
        #expect(select.string(at: 4) == "text")
        #expect(select.optionalInt64(at: 2) == nil)
        try select.bind([.integer(3)])
        #expect(try select.step() == false)
    }

    @Test func errorsCarryCodeMessageAndSQL() throws {
        let directory = TemporaryDirectory()
        let database = try Database(path: directory.file("errors.db"), mode: .readWriteCreate)
        try database.execute("CREATE TABLE u (x UNIQUE)")
        try database.execute("INSERT INTO u VALUES (?1)", [1])
        let error = #expect(throws: DatabaseError.self) {
            try database.execute("INSERT INTO u VALUES (?1)", [1])
        }
        #expect(error?.code == SQLITE_CONSTRAINT)
        #expect(error?.extendedCode == SQLITE_CONSTRAINT | (8 << 8)) // SQLITE_CONSTRAINT_UNIQUE
        #expect(error?.sql == "INSERT INTO u VALUES (?1)")
        #expect(error?.message.contains("UNIQUE") == true)
        #expect(throws: DatabaseError.self) { try database.execute("SELEC nonsense") }
    }

    @Test func transactionRollsBackWhenBodyThrows() throws {
        struct Abort: Error {}
        let directory = TemporaryDirectory()
        let database = try Database(path: directory.file("tx.db"), mode: .readWriteCreate)
        try database.execute("CREATE TABLE t (x)")
        #expect(throws: Abort.self) {
            try database.transaction {
                try database.execute("INSERT INTO t VALUES (1)")
                throw Abort()
            }
        }
        #expect(try database.scalarInt("SELECT count(*) FROM t") == 0)
        #expect(database.isInTransaction == false)
        try database.transaction { try database.execute("INSERT INTO t VALUES (2)") }
        #expect(try database.scalarInt("SELECT count(*) FROM t") == 1)
    }

    @Test func readOnlyConnectionCannotWrite() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("ro.db")
        _ = try SchemaMigrator.openWriter(path: path)
        let reader = try Database(path: path, mode: .readOnly)
        #expect(try reader.scalarInt("SELECT count(*) FROM tiles") == 0)
        let error = #expect(throws: DatabaseError.self) {
            try reader.execute("INSERT INTO regions (definition) VALUES ('{}')")
        }
        #expect(error?.code == SQLITE_READONLY)
    }
}

@Suite struct StatementLifetimeTests {
    @Test func aStatementMayOutliveItsDatabaseObject() throws {
        let directory = TemporaryDirectory()
        var database: Database? = try Database(path: directory.file("life.db"), mode: .readWriteCreate)
        try database?.execute("CREATE TABLE t (x); INSERT INTO t VALUES (42)")
        let statement = try #require(try database?.makeStatement("SELECT x FROM t"))
        database = nil // the connection stays alive (close_v2) until the statement is finalized
        #expect(try statement.scalarInt() == 42)
        // Error reporting reads the connection too.
        let error = #expect(throws: DatabaseError.self) { try statement.bind(Int64(1), at: 99) }
        #expect(error?.code == SQLITE_RANGE)
    }
}
