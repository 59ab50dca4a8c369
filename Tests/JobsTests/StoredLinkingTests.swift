import Foundation
import Jobs
import PackdTestSupport
import Packs
import Plan
import Store
import Testing

/// Resources another pack or the ambient cache already holds fresh are linked to a new pack, not
/// downloaded again; stale ones are fetched.
@Suite struct StoredLinkingTests {
    static func region(_ upstream: MapUpstream, _ bounds: [Double]) -> [String: Any] {
        ["style_url": upstream.base + "/style.json", "bounds": bounds, "min_zoom": 0, "max_zoom": 5]
    }

    static func plannedTilePaths(_ upstream: MapUpstream, _ bounds: [Double]) throws -> Set<String> {
        var builder = PlanBuilder(region: try RegionDefinition(json: region(upstream, bounds)))
        try builder.addStyle(Data(upstream.style.utf8))
        try builder.addTileJSON(Data(upstream.tileJSON.utf8), url: upstream.base + "/tiles.json")
        return Set(builder.plan.filter { $0.kind == .tile }.map { PackDownloadTests.path($0.url, upstream) })
    }

    /// The second of two overlapping packs fetches only the tiles the first lacks (and none of
    /// the sprite or glyphs), its progress is exact, and removing the first leaves it whole.
    @Test func overlappingPackDownloadsOnlyWhatTheFirstLacks() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let (westBounds, centreBounds) = ([-40.0, -20.0, 0.0, 20.0], [-20.0, -20.0, 20.0, 20.0])

        let first = try harness.createQueuedPack(region: Self.region(upstream, westBounds))
        try harness.onLoop { harness.scheduler.packQueued(first) }
        #expect(harness.waitForState(first, ["complete", "failed"]).last == "complete")
        let firstRequests = upstream.requests.count

        let second = try harness.createQueuedPack(region: Self.region(upstream, centreBounds))
        try harness.onLoop { harness.scheduler.packQueued(second) }
        #expect(harness.waitForState(second, ["complete", "failed"]).last == "complete",
                "\(harness.publishedError(second) ?? "")")
        let secondPaths = upstream.requests.dropFirst(firstRequests).map(\.target)

        let westTiles = try Self.plannedTilePaths(upstream, westBounds)
        let centreTiles = try Self.plannedTilePaths(upstream, centreBounds)
        let missing = centreTiles.subtracting(westTiles)
        #expect(!missing.isEmpty && missing.count < centreTiles.count, "the packs overlap in part")
        // The documents are fetched to plan; every other resource of the first is linked.
        #expect(Set(secondPaths) == missing.union(["/style.json", "/tiles.json"]))
        #expect(secondPaths.count == missing.count + 2)

        let reader = try StoreReader(path: database.path)
        let stored = try #require(try reader.progress(second))
        #expect(stored == (try reader.recountProgress(second)))
        #expect(stored.completedTiles == Int64(centreTiles.count))
        #expect(harness.publishedProgress(second) == stored)
        let record = try #require(try reader.pack(second))
        #expect(stored.completedResources == record.expectedResources)

        // Removing the first pack leaves every row of the second linked and counted.
        #expect(try harness.performAndWait { try $0.removePack(first) })
        let after = try StoreReader(path: database.path)
        #expect(try after.progress(second) == stored)
        #expect(try after.recountProgress(second) == stored)
        #expect(try after.linkedTileCount() == Int64(centreTiles.count))
        let ambient = try harness.performAndWait { ($0.ambientCacheSize, try $0.recountAmbientCacheSize()) }
        #expect(ambient.0 == ambient.1)
    }

    /// A tile in the ambient cache is linked while fresh and fetched again once expired.
    @Test func freshAmbientTileIsLinkedAndStaleOneRefetched() throws {
        let upstream = try TestUpstream { request in
            .respond(status: 200, headers: [("Cache-Control", "max-age=3600")], body: Array("upstream \(request.target)".utf8))
        }
        defer { upstream.stop() }
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let template = upstream.url("/t/{z}/{x}/{y}.png")
        let now = Int64(Date().timeIntervalSince1970)
        func cached(_ z: Int64, _ x: Int64, _ y: Int64, expires: Int64?) throws -> ResourceWrite {
            ResourceWrite(key: .tile(TileKey(urlTemplate: template, z: z, x: x, y: y)),
                          content: .body(try StoredBody.encoding(Array("ambient \(z)/\(x)/\(y)".utf8))),
                          cache: HTTPCacheHeaders(expires: expires))
        }
        let writes = [try cached(0, 0, 0, expires: now + 3600), try cached(1, 0, 0, expires: now - 60),
                      try cached(1, 1, 0, expires: nil)]
        try harness.performAndWait { database in
            let outcome = database.apply(writes, now: now)
            if let error = outcome.error { throw error }
        }

        let packID = try harness.createQueuedPack(region: ["tiles": [template], "bounds": [-170.0, -80.0, 170.0, 80.0],
                                                           "min_zoom": 0, "max_zoom": 1])
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["complete", "failed"]).last == "complete",
                "\(harness.publishedError(packID) ?? "")")
        let ambient = try harness.performAndWait { ($0.ambientCacheSize, try $0.recountAmbientCacheSize()) }
        #expect(ambient.0 == 0 && ambient.1 == 0)
        #expect(harness.publishedProgress(packID)?.completedTiles == 5)
        harness.close()

        // 0/0/0 (fresh) and 1/1/0 (no expiry) linked; 1/0/0 (expired) fetched with the rest.
        #expect(Set(upstream.requests.map(\.target)) == ["/t/1/0/0.png", "/t/1/0/1.png", "/t/1/1/1.png"])
        let reader = try StoreReader(path: database.path)
        func body(_ z: Int64, _ x: Int64, _ y: Int64) throws -> String? {
            guard let stored = try reader.resource(.tile(TileKey(urlTemplate: template, z: z, x: x, y: y)))?.body else {
                return nil
            }
            return String(decoding: try stored.decoded(), as: UTF8.self)
        }
        #expect(try body(0, 0, 0) == "ambient 0/0/0")
        #expect(try body(1, 1, 0) == "ambient 1/1/0")
        #expect(try body(1, 0, 0) == "upstream /t/1/0/0.png")
        let progress = try #require(try reader.progress(packID))
        #expect(progress.completedTiles == 5)
        #expect(progress == (try reader.recountProgress(packID)))
        #expect(try reader.linkedTileCount() == 5)
        #expect(try reader.ambientCacheSize() == 0)
    }
}
