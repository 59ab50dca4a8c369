import Foundation
import Packs
import PackdTestSupport
import Testing
@testable import Store

@Suite struct ImportTests {
    /// MapLibre's offline_schema.sql (schema 6), typed out independently of `OfflineSchema.ddl`.
    static let mapLibreSchema6 = MapLibreWrittenDatabase.schema6

    /// The SQL shape of a database: objects, columns (name, type, not null, default, pk),
    /// indexes with their columns and uniqueness, foreign keys.
    static func shape(_ database: Database) throws -> [[DatabaseValue]] {
        var shape = try rows(database, "SELECT type, name, tbl_name FROM sqlite_master ORDER BY type, name")
        for table in try rows(database, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") {
            shape += try rows(database, "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)", table)
            shape += try rows(database, "SELECT name, \"unique\", origin FROM pragma_index_list(?1) ORDER BY name", table)
            shape += try rows(database, "SELECT \"table\", \"from\", \"to\", on_delete FROM pragma_foreign_key_list(?1)", table)
        }
        shape += try rows(database, "PRAGMA user_version")
        return shape
    }

    static let tileColumns = "t.url_template, t.pixel_ratio, t.z, t.x, t.y, t.expires, t.modified, t.etag, t.data, t.compressed, t.accessed, t.must_revalidate"
    static let resourceColumns = "r.url, r.kind, r.expires, r.modified, r.etag, r.data, r.compressed, r.accessed, r.must_revalidate"

    static func packRows(_ database: Database, _ pack: Int64) throws -> (tiles: [[DatabaseValue]], resources: [[DatabaseValue]], region: [[DatabaseValue]]) {
        (try rows(database, "SELECT \(tileColumns) FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id WHERE rt.region_id = ?1 ORDER BY 1, 2, 3, 4, 5", [.integer(pack)]),
         try rows(database, "SELECT \(resourceColumns) FROM region_resources rr JOIN resources r ON r.id = rr.resource_id WHERE rr.region_id = ?1 ORDER BY 1", [.integer(pack)]),
         try rows(database, "SELECT definition, description FROM regions WHERE id = ?1", [.integer(pack)]))
    }

    /// The rows as an export of the pack writes them: its time in `modified` and `accessed`, no
    /// `expires`, `etag` or `must_revalidate` (`MapLibreExport`).
    static func exported(_ rows: (tiles: [[DatabaseValue]], resources: [[DatabaseValue]], region: [[DatabaseValue]]),
                         time: Int64) -> (tiles: [[DatabaseValue]], resources: [[DatabaseValue]], region: [[DatabaseValue]]) {
        func fixed(_ row: [DatabaseValue], expires: Int) -> [DatabaseValue] {
            var row = row
            (row[expires], row[expires + 1], row[expires + 2]) = (.null, .integer(time), .null)
            (row[expires + 5], row[expires + 6]) = (.integer(time), .integer(0))
            return row
        }
        return (rows.tiles.map { fixed($0, expires: 5) }, rows.resources.map { fixed($0, expires: 2) }, rows.region)
    }

    /// `PackFixture`'s packs were last changed then: an unversioned export's time.
    static let fixtureTime: Int64 = 1_700_000_000

    @Test func maplibreExportIsExactlySchemaSixWithOnlyThePack() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture)
        let output = fixture.path("pack.maplibre.db")
        let summary = try MapLibreExport.write(PackExportRequest(pack: pack.pack, version: nil), databasePath: pack.path, to: output)
        let export = try Database(path: output, mode: .readOnly)
        let reference = try Database(path: fixture.path("reference.db"), mode: .readWriteCreate)
        try reference.execute(Self.mapLibreSchema6)
        #expect(try Self.shape(export) == Self.shape(reference))

        let source = try Database(path: pack.path, mode: .readOnly)
        let expected = Self.exported(try Self.packRows(source, pack.pack), time: Self.fixtureTime)
        #expect(summary.tiles == expected.tiles.count && summary.resources == expected.resources.count)
        #expect(try rows(export, "SELECT id FROM regions") == [[.integer(1)]])
        // Exactly the pack: every row linked, ids renumbered densely, nothing else.
        #expect(try Self.packRows(export, 1) == expected)
        #expect(try export.scalarInt("SELECT count(*) FROM tiles") == Int64(expected.tiles.count))
        #expect(try export.scalarInt("SELECT max(id) FROM tiles") == Int64(expected.tiles.count))
        #expect(try export.scalarInt("SELECT count(*) FROM resources") == Int64(expected.resources.count))
        #expect(throws: ExportError.self) { try MapLibreExport.write(PackExportRequest(pack: 99, version: nil), databasePath: pack.path, to: output) }
    }

    @Test func exportImportRoundTripKeepsEveryByteAndIsIdempotent() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture)
        let export = fixture.path("pack.maplibre.db")
        _ = try MapLibreExport.write(PackExportRequest(pack: pack.pack, version: nil), databasePath: pack.path, to: export)

        let target = try fixture.packdDatabase("target.db")
        let upload = try ValidatedImport.check(path: export, scratchDirectory: fixture.directory)
        let imported = try OfflineDatabaseImport.merge(upload, into: target, now: 1_800_000_000)
        #expect(imported == [.init(id: 1, added: true)])

        let source = try Database(path: pack.path, mode: .readOnly)
        let expected = Self.exported(try Self.packRows(source, pack.pack), time: Self.fixtureTime)
        #expect(try Self.packRows(target, 1) == expected)

        // packd's own rows: named from the description, progress as MapLibre counts it.
        #expect(try rows(target, "SELECT name, state, context FROM packd_packs")
                == [[.text("Test pack"), .text("inactive"), expected.region[0][1]]])
        let status = try rows(target, """
            SELECT (SELECT count(*) FROM region_resources WHERE region_id = 1) + (SELECT count(*) FROM region_tiles WHERE region_id = 1),
                   (SELECT count(*) FROM region_tiles, tiles WHERE region_id = 1 AND tile_id = tiles.id),
                   (SELECT SUM(LENGTH(data)) FROM region_tiles, tiles WHERE region_id = 1 AND tile_id = tiles.id)
            """)
        #expect(try rows(target, "SELECT completed_resources, completed_tiles, completed_tile_bytes FROM packd_progress WHERE pack_id = 1") == status)
        #expect(try target.scalarInt("SELECT linked_tiles FROM packd_totals") == Int64(expected.tiles.count))

        // The same upload again is the same region: nothing added, nothing duplicated.
        let again = try OfflineDatabaseImport.merge(upload, into: target)
        #expect(again == [.init(id: 1, added: false)])
        #expect(try Self.packRows(target, 1) == expected)
        #expect(try target.scalarInt("SELECT count(*) FROM regions") == 1)
        #expect(try target.scalarInt("SELECT count(*) FROM tiles") == Int64(expected.tiles.count))
    }

    @Test func newerModifiedWinsAndMissingModifiedNeverReplaces() throws {
        let fixture = StoreIOFixture()
        let template = "https://t/{z}/{x}/{y}"
        // The upload, as a phone writes one: four tiles with different `modified` against the target's.
        let upload = fixture.path("side.maplibre.db")
        do {
            let side = try Database(path: upload, mode: .readWriteCreate)
            try side.execute(Self.mapLibreSchema6)
            try side.execute(#"INSERT INTO regions (definition, description) VALUES ('{"r":1}', '{"name":"up"}')"#)
        }
        let side = try Database(path: upload, mode: .readWrite)
        let cases: [(x: Int64, stored: Int64?, uploaded: Int64?, replaced: Bool)] = [
            (0, 100, 200, true), (1, 200, 100, false), (2, 100, nil, false), (3, nil, 200, false),
        ]
        for item in cases {
            try fixture.addTile(side, region: 1, template: template, z: 2, x: item.x, y: 0, body: [2, 2, 2], modified: item.uploaded)
        }

        let target = try fixture.packdDatabase("target.db")
        let existing = try fixture.addRegion(target, definition: "{\"other\":1}", name: "kept")
        for item in cases {
            try fixture.addTile(target, region: existing, template: template, z: 2, x: item.x, y: 0, body: [1, 1, 1], modified: item.stored)
        }
        let idsBefore = try rows(target, "SELECT id, x FROM tiles ORDER BY x")
        let imported = try OfflineDatabaseImport.merge(try ValidatedImport.check(path: upload, scratchDirectory: fixture.directory), into: target)
        #expect(imported == [.init(id: existing + 1, added: true)])
        for item in cases {
            let data = try rows(target, "SELECT data FROM tiles WHERE x = ?1", [.integer(item.x)])
            #expect(data == [[.blob(item.replaced ? [2, 2, 2] : [1, 1, 1])]], "x = \(item.x)")
        }
        // Updated in place: ids stable, the other pack keeps its links, the new pack links all four.
        #expect(try rows(target, "SELECT id, x FROM tiles ORDER BY x") == idsBefore)
        #expect(try target.scalarInt("SELECT count(*) FROM region_tiles WHERE region_id = ?1", [.integer(existing)]) == 4)
        #expect(try target.scalarInt("SELECT count(*) FROM region_tiles WHERE region_id = ?1", [.integer(existing + 1)]) == 4)
    }

    @Test func schemaFiveUploadsAreUpgradedInACopy() throws {
        let fixture = StoreIOFixture()
        let path = fixture.path("v5.db")
        do {
            let v5 = try Database(path: path, mode: .readWriteCreate)
            let ddl = Self.mapLibreSchema6
                .replacingOccurrences(of: #"\s*must_revalidate INTEGER NOT NULL DEFAULT 0,"#, with: "", options: .regularExpression)
                .replacingOccurrences(of: "user_version = 6", with: "user_version = 5")
            try v5.execute(ddl)
            try v5.execute("INSERT INTO regions (definition) VALUES ('{}')")
            try v5.execute("INSERT INTO tiles (url_template, pixel_ratio, z, x, y, data, accessed) VALUES ('t', 1, 1, 0, 1, x'0102', 5)")
            try v5.execute("INSERT INTO region_tiles VALUES (1, 1)")
            #expect(try v5.scalarInt("SELECT count(*) FROM pragma_table_info('tiles') WHERE name = 'must_revalidate'") == 0)
        }
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        let target = try fixture.packdDatabase("target.db")
        var upload: ValidatedImport? = try ValidatedImport.check(path: path, scratchDirectory: fixture.directory)
        #expect(upload?.originalVersion == 5)
        let copy = try #require(upload?.path)
        #expect(copy != path)
        let imported = try OfflineDatabaseImport.merge(try #require(upload), into: target)
        #expect(imported.map(\.added) == [true])
        #expect(try rows(target, "SELECT z, x, y, data, must_revalidate FROM tiles") == [[1, 0, 1, .blob([1, 2]), 0]])
        // The upload itself is untouched; the upgraded copy goes away with the value.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == original)
        upload = nil
        #expect(!FileManager.default.fileExists(atPath: copy))
    }

    @Test func hostileUploadsAreClearErrorsAndMergeNothing() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture, maxZoom: 2)
        let good = fixture.path("good.db")
        _ = try MapLibreExport.write(PackExportRequest(pack: pack.pack, version: nil), databasePath: pack.path, to: good)
        let goodBytes = try Data(contentsOf: URL(fileURLWithPath: good))

        func variant(_ name: String, _ change: (Database) throws -> Void) throws -> String {
            let path = fixture.path(name)
            try goodBytes.write(to: URL(fileURLWithPath: path))
            let database = try Database(path: path, mode: .readWrite)
            try change(database)
            return path
        }
        let notSQLite = fixture.path("random.bin")
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: URL(fileURLWithPath: notSQLite))
        let truncated = fixture.path("truncated.db")
        try goodBytes.prefix(goodBytes.count / 2).write(to: URL(fileURLWithPath: truncated))
        let truncatedOnPage = fixture.path("truncated-page.db")
        try goodBytes.prefix(goodBytes.count - 4096).write(to: URL(fileURLWithPath: truncatedOnPage))
        let empty = fixture.path("empty.db")
        try Data().write(to: URL(fileURLWithPath: empty))

        let cases: [(String, (ImportError) -> Bool)] = [
            (notSQLite, { $0 == .notSQLite }),
            (empty, { $0 == .notSQLite }),
            (truncated, { if case .corrupt = $0 { return true } else { return false } }),
            (truncatedOnPage, { if case .corrupt = $0 { return true } else { return false } }),
            (try variant("wrong-schema.db") { try $0.execute("CREATE TABLE extra (a)") },
             { if case .unexpectedSchema = $0 { return true } else { return false } }),
            (try variant("missing-table.db") { try $0.execute("DROP TABLE region_resources") },
             { if case .unexpectedSchema = $0 { return true } else { return false } }),
            (try variant("trigger.db") { try $0.execute("CREATE TRIGGER t AFTER INSERT ON tiles BEGIN DELETE FROM tiles; END") },
             { $0 == .triggersOrViews(["trigger t"]) }),
            (try variant("view.db") { try $0.execute("CREATE VIEW v AS SELECT * FROM tiles") },
             { $0 == .triggersOrViews(["view v"]) }),
            (try variant("version3.db") { try $0.execute("PRAGMA user_version = 3") }, { $0 == .unsupportedVersion(3) }),
            (try variant("version7.db") { try $0.execute("PRAGMA user_version = 7") }, { $0 == .unsupportedVersion(7) }),
            (try variant("bad-rows.db") { try $0.execute("UPDATE tiles SET z = 40 WHERE id = 1") },
             { if case .invalidRows = $0 { return true } else { return false } }),
            (try variant("text-zoom.db") { try $0.execute("UPDATE tiles SET x = 'zero' WHERE id = 1") },
             { if case .invalidRows = $0 { return true } else { return false } }),
            (try variant("dangling.db") { try $0.execute("PRAGMA foreign_keys = OFF; INSERT INTO region_tiles VALUES (1, 999999)") },
             { if case .invalidRows = $0 { return true } else { return false } }),
        ]
        let target = try fixture.packdDatabase("target.db")
        for (path, matches) in cases {
            #expect(performing: { _ = try ValidatedImport.check(path: path, scratchDirectory: fixture.directory) },
                    throws: { error in (error as? ImportError).map(matches) ?? false })
        }
        var tooSmall = UploadLimits()
        tooSmall.maximumBytes = 4096
        #expect(throws: ImportError.tooLarge(size: UInt64(goodBytes.count), limit: 4096)) {
            try ValidatedImport.check(path: good, limits: tooSmall, scratchDirectory: fixture.directory)
        }
        #expect(try target.scalarInt("SELECT count(*) FROM regions") == 0)
        #expect(try target.scalarInt("SELECT count(*) FROM tiles") == 0)
        // The clean upload still merges: the failures above were about the files, not the target.
        let merged = try OfflineDatabaseImport.merge(try ValidatedImport.check(path: good, scratchDirectory: fixture.directory), into: target)
        #expect(merged.count == 1)
    }

    @Test func importThroughTheWriterRespectsTheTileLimitAndRebasesTheAmbientSize() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture, maxZoom: 2)
        let upload = fixture.path("pack.maplibre.db")
        let summary = try MapLibreExport.write(PackExportRequest(pack: pack.pack, version: nil), databasePath: pack.path, to: upload)

        let store = try OfflineDatabase(path: fixture.path("target.db"))
        // One of the upload's tiles is already here as an ambient (unlinked) row.
        try fixture.addTile(store.database, region: nil, template: PackFixture.vectorTemplate, z: 0, x: 0, y: 0, body: [9, 9])
        try store.resynchronizeAmbientCacheSize()
        let ambientBefore = store.ambientCacheSize
        #expect(ambientBefore > 0)

        try store.setTileLimit(Int64(summary.tiles - 1))
        #expect(throws: ImportError.tileLimitExceeded(tiles: Int64(summary.tiles), limit: Int64(summary.tiles - 1))) {
            try store.importOfflineDatabase(try ValidatedImport.check(path: upload, scratchDirectory: fixture.directory))
        }
        #expect(try store.database.scalarInt("SELECT count(*) FROM regions") == 0)
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles") == 1)

        try store.setTileLimit(nil)
        let packs = try store.importOfflineDatabase(try ValidatedImport.check(path: upload, scratchDirectory: fixture.directory))
        #expect(packs.count == 1)
        // The ambient tile is now a pack tile: no longer counted against the ambient cache.
        #expect(store.ambientCacheSize == 0)
        #expect(store.ambientCacheSize == (try store.recountAmbientCacheSize()))
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == Int64(summary.tiles))
        #expect(try ProgressQueries.stored(1, in: store.database)?.completed == (try ProgressQueries.recount(1, in: store.database)))
    }

    @Test func aWALModeUploadIsReadWithoutItsCompanionFiles() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture, maxZoom: 1)
        let upload = fixture.path("wal.maplibre.db")
        _ = try MapLibreExport.write(PackExportRequest(pack: pack.pack, version: nil), databasePath: pack.path, to: upload)
        do {
            let database = try Database(path: upload, mode: .readWrite)
            try database.execute("PRAGMA journal_mode = WAL")
        }
        // Closing checkpointed and removed -wal/-shm; the header still says WAL.
        #expect(!FileManager.default.fileExists(atPath: upload + "-wal"))
        let target = try fixture.packdDatabase("target.db")
        let packs = try OfflineDatabaseImport.merge(try ValidatedImport.check(path: upload, scratchDirectory: fixture.directory), into: target)
        #expect(packs.count == 1)
        let source = try Database(path: pack.path, mode: .readOnly)
        #expect(try Self.packRows(target, 1) == Self.exported(try Self.packRows(source, pack.pack), time: Self.fixtureTime))
        // Reading it created nothing beside it.
        #expect(!FileManager.default.fileExists(atPath: upload + "-shm"))
    }
}
