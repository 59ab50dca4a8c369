import Packs
import Testing
@testable import Store

/// `linkFreshTiles`/`linkFreshResources`: rows stored elsewhere and fresh are linked to a pack
/// with exact progress, totals and ambient size; stale, absent, out-of-span rows and rows over
/// the tile limit are not.
@Suite struct LinkingTests {
    static let now: Int64 = 1_000_000

    static func tile(_ x: Int64, _ y: Int64, expires: Int64?, pack: Int64? = nil) throws -> ResourceWrite {
        var write = try StoreFixtures.tile(z: 3, x: x, y: y, pack: pack, size: 200 + Int(x * 10 + y))
        write.cache = HTTPCacheHeaders(expires: expires)
        return write
    }

    @Test func linksFreshTilesInsideTheSpansOnly() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let other = try store.createPack(StoreFixtures.pack("other"), now: 1)
        let pack = try store.createPack(StoreFixtures.pack("new"), now: 1)
        let writes = [
            try Self.tile(1, 1, expires: nil, pack: other),       // another pack's, no expiry: linked
            try Self.tile(2, 1, expires: Self.now + 10),          // ambient, fresh: linked
            try Self.tile(3, 1, expires: Self.now - 10),          // ambient, stale: not linked
            try Self.tile(4, 1, expires: nil),                    // ambient, outside the spans
            try Self.tile(1, 2, expires: nil, pack: pack),        // already this pack's
        ]
        #expect(store.apply(writes, now: Self.now).error == nil)
        let before = try store.progress(pack)

        let linked = try store.linkFreshTiles(packID: pack, urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 3,
                                              spans: [[1, 1, 3], [2, 1, 2]], xRange: 0...7, yRange: 0...7, now: Self.now)
        #expect(linked.rows.count == 2)
        #expect(linked.rows.contains(x: 1, y: 1) && linked.rows.contains(x: 2, y: 1))
        let progress = try #require(linked.progress)
        #expect(progress.completedTiles == before.completedTiles + 2)
        #expect(progress == (try ProgressQueries.recount(pack, in: store.database)))
        #expect(store.ambientCacheSize == (try store.recountAmbientCacheSize()))
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == (try ProgressQueries.recountLinkedTiles(in: store.database)))

        // Idempotent: a second call finds nothing left to link.
        let again = try store.linkFreshTiles(packID: pack, urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 3,
                                             spans: [[1, 1, 3], [2, 1, 2]], xRange: 0...7, yRange: 0...7, now: Self.now)
        #expect(again.rows.count == 0 && again.progress == progress)
    }

    @Test func tilesNoPackHoldsAreNotLinkedPastTheTileLimit() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let other = try store.createPack(StoreFixtures.pack("other"), now: 1)
        let pack = try store.createPack(StoreFixtures.pack("new"), now: 1)
        #expect(store.apply([try Self.tile(0, 0, expires: nil, pack: other), try Self.tile(1, 0, expires: nil),
                             try Self.tile(2, 0, expires: nil)], now: Self.now).error == nil)
        try store.setTileLimit(2)
        // Linking both ambient tiles would make 3 distinct pack tiles: only the shared one is linked.
        let linked = try store.linkFreshTiles(packID: pack, urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 3,
                                              spans: [[0, 0, 2]], xRange: 0...2, yRange: 0...0, now: Self.now)
        #expect(linked.rows.count == 1 && linked.rows.contains(x: 0, y: 0))
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == 1)
        #expect(store.ambientCacheSize == (try store.recountAmbientCacheSize()))
    }

    @Test func linksFreshResourcesByURL() throws {
        let directory = TemporaryDirectory()
        let store = try OfflineDatabase(path: directory.file("packd.db"))
        let pack = try store.createPack(StoreFixtures.pack("new"), now: 1)
        var fresh = try StoreFixtures.resource("https://example/sprite.json", kind: .spriteJSON, pack: nil, text: "{}")
        fresh.cache = HTTPCacheHeaders(expires: Self.now + 60)
        var stale = try StoreFixtures.resource("https://example/sprite.png", kind: .spriteImage, pack: nil, text: "png")
        stale.cache = HTTPCacheHeaders(expires: Self.now)
        #expect(store.apply([fresh, stale], now: Self.now).error == nil)

        let linked = try store.linkFreshResources(
            packID: pack, urls: ["https://example/sprite.json", "https://example/sprite.png", "https://example/absent"],
            now: Self.now)
        #expect(linked.rows == ["https://example/sprite.json"])
        #expect(linked.progress == (try ProgressQueries.recount(pack, in: store.database)))
        #expect(linked.progress?.completedResources == 1)
        #expect(store.ambientCacheSize == (try store.recountAmbientCacheSize()))
        // A removed pack links nothing.
        #expect(try store.removePack(pack))
        #expect(try store.linkFreshResources(packID: pack, urls: ["https://example/sprite.json"], now: Self.now).rows.isEmpty)
    }
}
