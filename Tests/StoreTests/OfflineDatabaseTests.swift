import CSQLite
import Packs
import PackdTestSupport
import Testing
import Writer
@testable import Store

@Suite struct OfflineDatabaseTests {
    /// MapLibre's `getCompletedResourceCountAndSize` + `getCompletedTileCountAndSize`, verbatim
    /// from offline_database.cpp, combined as `getRegionCompletedStatus` does.
    func mapLibreCompletedStatus(_ region: Int64, _ database: Database) throws -> StoredProgress {
        func query(_ sql: String) throws -> (Int64, Int64) {
            let statement = try database.makeStatement(sql)
            try statement.bind([.integer(region)])
            #expect(try statement.step())
            return (statement.int64(at: 0), statement.int64(at: 1)) // NULL SUM reads as 0, as in C++
        }
        let (resources, resourceSize) = try query(
            "SELECT COUNT(*), SUM(LENGTH(data)) FROM region_resources, resources WHERE region_id = ?1 AND resource_id = resources.id ")
        let (tiles, tileSize) = try query(
            "SELECT COUNT(*), SUM(LENGTH(data)) FROM region_tiles, tiles WHERE region_id = ?1 AND tile_id = tiles.id ")
        return StoredProgress(completedResources: resources + tiles, completedBytes: resourceSize + tileSize,
                            completedTiles: tiles, completedTileBytes: tileSize)
    }

    @Test func progressEqualsMapLibresOwnCompletedStatusQueries() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let a = try store.createPack(StoreFixtures.pack("a"), now: 100)
        let b = try store.createPack(StoreFixtures.pack("b"), now: 100)

        var writes: [ResourceWrite] = [
            try StoreFixtures.resource("https://example/style.json", pack: a, text: String(repeating: "{\"version\":8}", count: 50)),
            try StoreFixtures.resource("https://example/style.json", pack: b, text: String(repeating: "{\"version\":8}", count: 50)),
            try StoreFixtures.resource("https://example/sprite.json", kind: .spriteJSON, pack: a, text: "{}"),
            ResourceWrite(key: .tile(TileKey(urlTemplate: StoreFixtures.template, z: 2, x: 3, y: 3)), content: .noContent, packID: a),
        ]
        for x in Int64(0)..<4 {
            for y in Int64(0)..<4 { writes.append(try StoreFixtures.tile(z: 2, x: x, y: y, pack: a, size: 200 + Int(x * 50 + y))) }
        }
        // Pack b shares half of a's tiles, and one tile is written twice in the same batch.
        for x in Int64(2)..<4 {
            for y in Int64(0)..<4 { writes.append(try StoreFixtures.tile(z: 2, x: x, y: y, pack: b, size: 200 + Int(x * 50 + y))) }
        }
        writes.append(try StoreFixtures.tile(z: 2, x: 0, y: 0, pack: a, size: 200))
        let outcome = store.apply(writes, now: 200)
        #expect(outcome.error == nil)

        // A second batch re-downloads a shared tile with a different size: both packs' bytes move.
        let resized = store.apply([try StoreFixtures.tile(z: 2, x: 3, y: 1, pack: b, size: 900, seed: 7)], now: 300)
        #expect(resized.error == nil)

        for pack in [a, b] {
            let mapLibre = try mapLibreCompletedStatus(pack, store.database)
            #expect(try store.progress(pack).completed == mapLibre)
            #expect(try ProgressQueries.recount(pack, in: store.database) == mapLibre)
        }
        let progressA = try store.progress(a)
        #expect(progressA.completedTiles == 16) // 16 tiles; (3,3) written twice (no content, then body) counts once
        #expect(progressA.completedResources == 18)
        #expect(try store.progress(b).completedTiles == 8)
        #expect(try store.progress(b).completedResources == 9)
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles") == 16)
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == 16)
        #expect(try ProgressQueries.recountLinkedTiles(in: store.database) == 16)
        #expect(outcome.progress[a]?.completedTiles == 16)
        #expect(resized.progress[b] == (try store.progress(b)))
    }

    @Test func rowsReadBackWithMapLibresGetTileQueryAndDecompress() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let pack = try store.createPack(StoreFixtures.pack("p"), now: 1)
        let json = Array(String(repeating: "{\"a\":1},", count: 300).utf8)
        let cache = HTTPCacheHeaders(expires: 5000, modified: 4000, etag: "\"e1\"", mustRevalidate: true)
        let write = ResourceWrite(key: .tile(TileKey(urlTemplate: StoreFixtures.template, pixelRatio: 2, z: 5, x: 7, y: 9)),
                                  content: .body(try StoredBody.encoding(gzip(json))), cache: cache, packID: pack)
        #expect(store.apply([write], now: 10).error == nil)

        // offline_database.cpp getTile, verbatim.
        let statement = try store.database.makeStatement(
            "SELECT etag, expires, must_revalidate, modified, data, compressed FROM tiles WHERE url_template = ?1   AND pixel_ratio  = ?2   AND x            = ?3   AND y            = ?4   AND z            = ?5 ")
        try statement.bind([.text(StoreFixtures.template), .integer(2), .integer(7), .integer(9), .integer(5)])
        #expect(try statement.step())
        #expect(statement.string(at: 0) == "\"e1\"")
        #expect(statement.int64(at: 1) == 5000)
        #expect(statement.int64(at: 2) == 1)
        #expect(statement.int64(at: 3) == 4000)
        #expect(statement.int64(at: 5) == 1)
        let data = try #require(statement.blob(at: 4))
        #expect(try StoredBody(data: data, compressed: true).decoded() == json)
    }

    @Test func updatesKeepIdsAndNotModifiedOnlyTouchesFreshness() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let key = ResourceKey.resource(url: "https://example/a.json", kind: .source)
        #expect(store.apply([try StoreFixtures.resource("https://example/a.json", kind: .source, pack: nil, text: "one")], now: 1).error == nil)
        let first = try #require(try store.find(key))
        #expect(store.apply([try StoreFixtures.resource("https://example/a.json", kind: .source, pack: nil, text: "two!")], now: 2).error == nil)
        let second = try #require(try store.find(key))
        #expect(second.id == first.id)
        #expect(second.size == 4)

        let revalidated = ResourceWrite(key: key, content: .notModified,
                                        cache: HTTPCacheHeaders(expires: 99, etag: "ignored", mustRevalidate: true))
        #expect(store.apply([revalidated], now: 3).appliedWrites == 1)
        let row = try #require(try store.database.makeStatement("SELECT expires, must_revalidate, accessed, etag, data FROM resources WHERE id = \(first.id)").bindAndStep())
        #expect(row.int64(at: 0) == 99 && row.int64(at: 1) == 1 && row.int64(at: 2) == 3)
        #expect(row.isNull(at: 3))
        #expect(row.blob(at: 4) == Array("two!".utf8))

        let unknown = ResourceWrite(key: .resource(url: "https://example/none", kind: .source), content: .notModified)
        let outcome = store.apply([unknown], now: 4)
        #expect(outcome.appliedWrites == 0)
        #expect(outcome.missing == [unknown.key])
    }

    @Test func removalMakesUnsharedRowsAmbientAndKeepsSharedOnes() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let a = try store.createPack(StoreFixtures.pack("a"), now: 1)
        let b = try store.createPack(StoreFixtures.pack("b"), now: 1)
        var writes: [ResourceWrite] = []
        for x in Int64(0)..<6 { writes.append(try StoreFixtures.tile(z: 3, x: x, y: 0, pack: a)) }
        for x in Int64(4)..<8 { writes.append(try StoreFixtures.tile(z: 3, x: x, y: 0, pack: b)) }
        #expect(store.apply(writes, now: 2).error == nil)
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == 8)

        #expect(try store.removePack(a))
        #expect(try store.removePack(a) == false)
        // 0…3 were only in a: now ambient (the default 50 MiB limit keeps them); 4, 5 stay in b.
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles") == 8)
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles WHERE id NOT IN (SELECT tile_id FROM region_tiles)") == 4)
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == 4)
        #expect(try ProgressQueries.recountLinkedTiles(in: store.database) == 4)
        #expect(try store.database.scalarInt("SELECT count(*) FROM packd_packs") == 1)
        #expect(try store.database.scalarInt("SELECT count(*) FROM packd_progress") == 1)
        #expect(try store.progress(b).completedTiles == 4)
        #expect(store.ambientCacheSize == (try store.recountAmbientCacheSize()))
        #expect(store.ambientCacheSize > 4 * 300)

        // With the cache disabled, removing b leaves nothing but the schema.
        try store.setMaximumAmbientCacheSize(0)
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles") == 4)
        #expect(try store.removePack(b))
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles") == 0)
        #expect(store.ambientCacheSize == 0)
        #expect(try store.database.scalarString("PRAGMA integrity_check") == "ok")
    }

    @Test func ambientCacheEvictsLeastRecentlyAccessedAmbientRowsOnly() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let pack = try store.createPack(StoreFixtures.pack("p"), now: 1)
        // Pack rows: big, old; they must neither count nor be evicted.
        let packWrites = try (0..<5).map { try StoreFixtures.tile(z: 9, x: Int64($0), y: 0, pack: pack, size: 4000) }
        #expect(store.apply(packWrites, now: 1).error == nil)

        let rowSize = Int64(1000 + StoreFixtures.template.utf8.count)
        try store.setMaximumAmbientCacheSize(rowSize * 10)
        // Ten ambient tiles, each accessed at a later second.
        for i in 0..<10 {
            #expect(store.apply([try StoreFixtures.tile(z: 4, x: Int64(i), y: 0, pack: nil, size: 1000)], now: 10 + Int64(i)).error == nil)
        }
        #expect(store.ambientCacheSize == rowSize * 10)
        #expect(try store.recountAmbientCacheSize() == rowSize * 10)
        // Touch tiles 0 and 1 so they become the most recently used.
        var touches = AccessTouches()
        for x in [Int64(0), 1] { touches.tileIDs.insert(try #require(try store.find(.tile(TileKey(urlTemplate: StoreFixtures.template, z: 4, x: x, y: 0)))).id) }
        #expect(store.apply([], now: 50, touches: touches).error == nil)
        // Three more. Each time the limit (10 rows) is passed, the least recently accessed ambient
        // tiles go until 90 % of it is left: 2 and 3 for tile 10, then 4 and 5 for tile 12.
        for i in 10..<13 {
            #expect(store.apply([try StoreFixtures.tile(z: 4, x: Int64(i), y: 0, pack: nil, size: 1000)], now: 60 + Int64(i)).error == nil)
        }
        var remaining: [Int64] = []
        try store.database.cachedStatement("SELECT x FROM tiles WHERE z = 4 ORDER BY x").forEachRow { remaining.append($0.int64(at: 0)) }
        #expect(remaining == [0, 1, 6, 7, 8, 9, 10, 11, 12])
        #expect(store.ambientCacheSize <= rowSize * 10)
        #expect(try store.recountAmbientCacheSize() == store.ambientCacheSize)
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles WHERE z = 9") == 5)
        #expect(try store.progress(pack).completedTiles == 5)

        try store.invalidateAmbientCache()
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles WHERE expires = 0 AND must_revalidate = 1") == 9)
        try store.clearAmbientCache()
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles") == 5)
        #expect(store.ambientCacheSize == 0)
    }

    @Test func tileLimitRefusesNewDistinctTilesButNotSharedOnes() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let a = try store.createPack(StoreFixtures.pack("a"), now: 1)
        let b = try store.createPack(StoreFixtures.pack("b"), now: 1)
        try store.setTileLimit(3)
        let first = store.apply(try (0..<4).map { try StoreFixtures.tile(z: 1, x: Int64($0), y: 0, pack: a) }, now: 2)
        #expect(first.tileLimitExceeded == [a])
        #expect(first.linkedTiles == 3)
        // b may link a tile a already holds (it is not one more distinct tile)…
        let shared = store.apply([try StoreFixtures.tile(z: 1, x: 0, y: 0, pack: b)], now: 3)
        #expect(shared.tileLimitExceeded.isEmpty)
        #expect(try store.progress(b).completedTiles == 1)
        // …but not a new one.
        let fresh = store.apply([try StoreFixtures.tile(z: 1, x: 9, y: 9, pack: b)], now: 3)
        #expect(fresh.tileLimitExceeded == [b])
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == 3)
        try store.setTileLimit(nil)
        #expect(store.apply([try StoreFixtures.tile(z: 1, x: 9, y: 9, pack: b)], now: 4).tileLimitExceeded.isEmpty)
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == 4)
    }

    @Test func writesForARemovedPackBecomeAmbientInsteadOfFailingTheBatch() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let a = try store.createPack(StoreFixtures.pack("a"), now: 1)
        let b = try store.createPack(StoreFixtures.pack("b"), now: 1)
        try store.removePack(b)
        let outcome = store.apply([try StoreFixtures.tile(z: 1, x: 0, y: 0, pack: a), try StoreFixtures.tile(z: 1, x: 1, y: 0, pack: b)], now: 2)
        #expect(outcome.error == nil)
        #expect(outcome.appliedWrites == 2)
        #expect(try store.progress(a).completedTiles == 1)
        #expect(try store.database.scalarInt("SELECT count(*) FROM region_tiles") == 1)
    }

    @Test func eventsKeepIncreasingIdsAndErrorsAreBounded() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("packd.db")
        var lastID: Int64 = 0
        do {
            let store = try OfflineDatabase(path: path)
            let pack = try store.createPack(StoreFixtures.pack("a"), now: 1)
            for _ in 0..<3 { lastID = try store.appendEvent(packID: pack, type: "progress", json: "{}", now: 1) }
            try store.database.execute("DELETE FROM packd_events")
            for i in 0..<(Int(OfflineDatabase.maximumErrorsPerPack) + 5) {
                try store.recordFailure(packID: pack, url: "https://t/\(i)", status: 500, message: "boom", attempts: 3, now: 1)
            }
            #expect(try store.database.scalarInt("SELECT count(*) FROM packd_errors") == OfflineDatabase.maximumErrorsPerPack)
            #expect(try store.database.scalarInt("SELECT min(url = 'https://t/5') FROM (SELECT url FROM packd_errors ORDER BY id LIMIT 1)") == 1)
            #expect(try store.progress(pack).failedResources == OfflineDatabase.maximumErrorsPerPack + 5)
        }
        let reopened = try OfflineDatabase(path: path)
        #expect(try reopened.appendEvent(packID: nil, type: "state", json: "{}", now: 2) == lastID + 1)
    }

    @Test func resetLeavesSchemaAndSettings() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let pack = try store.createPack(StoreFixtures.pack("a"), now: 1)
        try store.setMaximumAmbientCacheSize(12345)
        #expect(store.apply([try StoreFixtures.tile(z: 1, x: 0, y: 0, pack: pack), try StoreFixtures.tile(z: 1, x: 1, y: 0, pack: nil)], now: 2).error == nil)
        try store.reset()
        for table in ["regions", "tiles", "resources", "region_tiles", "packd_packs", "packd_progress"] {
            #expect(try store.database.scalarInt("SELECT count(*) FROM \(table)") == 0, "\(table)")
        }
        #expect(try store.database.scalarInt("PRAGMA user_version") == 6)
        #expect(try OfflineDatabase(path: directory.file("packd.db")).maximumAmbientCacheSize == 12345)
    }
}

extension Statement {
    /// Steps once (for one-row checks in tests); nil when there is no row.
    func bindAndStep() throws -> Statement? {
        try bind([])
        return try step() ? self : nil
    }
}

@Suite struct AmbientAccountingTests {
    /// Every path that moves rows in or out of the ambient cache keeps the maintained size equal
    /// to a recount: inserts, re-downloads of another size, links claiming ambient rows, removal.
    @Test func maintainedAmbientSizeAlwaysEqualsARecount() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("a.db"))
        let pack = try store.createPack(StoreFixtures.pack("p"), now: 1)
        func check(_ step: String) throws {
            #expect(store.ambientCacheSize == (try store.recountAmbientCacheSize()), "after \(step)")
        }
        _ = store.apply(try (0..<6).map { try StoreFixtures.tile(z: 3, x: Int64($0), y: 0, pack: nil, size: 500) }, now: 1)
        try check("ambient inserts")
        _ = store.apply([try StoreFixtures.tile(z: 3, x: 0, y: 0, pack: nil, size: 900, seed: 3)], now: 2)
        try check("ambient re-download")
        _ = store.apply([ResourceWrite(key: .tile(TileKey(urlTemplate: StoreFixtures.template, z: 3, x: 1, y: 0)), content: .linkExisting, packID: pack),
                         try StoreFixtures.tile(z: 3, x: 2, y: 0, pack: pack, size: 700, seed: 4)], now: 3)
        try check("links claiming ambient rows")
        _ = store.apply([try StoreFixtures.resource("https://example/ü.json", pack: nil, text: "héllo")], now: 4)
        try check("a non-ASCII URL")
        _ = store.apply([ResourceWrite(key: .tile(TileKey(urlTemplate: StoreFixtures.template, z: 3, x: 3, y: 0)), content: .noContent)], now: 5)
        try check("no content")
        try store.removePack(pack)
        try check("removal")
        let reopened = try OfflineDatabase(path: directory.file("a.db"))
        #expect(reopened.ambientCacheSize == store.ambientCacheSize)
    }

    @Test func storageFullIsReportedAndTheBatchRolledBack() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("full.db"))
        let pack = try store.createPack(StoreFixtures.pack("p"), now: 1)
        let pages = try #require(try store.database.scalarInt("PRAGMA page_count"))
        try store.database.setMaximumPageCount(pages + 8)
        let ambientBefore = store.ambientCacheSize
        let outcome = store.apply(try (0..<40).map { try StoreFixtures.tile(z: 8, x: Int64($0), y: 0, pack: pack, size: 4000) }, now: 2)
        let error = try #require(outcome.error)
        #expect(error.isStorageFull)
        #expect(outcome.failedPackIDs == [pack])
        #expect(try store.database.scalarInt("SELECT count(*) FROM tiles") == 0)
        #expect(try store.progress(pack) == StoredProgress())
        #expect(store.ambientCacheSize == ambientBefore)
        // Once there is room again, the same connection keeps working.
        try store.database.setMaximumPageCount(1 << 30)
        #expect(store.apply([try StoreFixtures.tile(z: 8, x: 0, y: 0, pack: pack)], now: 3).error == nil)
        #expect(try store.progress(pack).completedTiles == 1)
    }
}
