import Fetch
import Foundation
import Jobs
import PackdTestSupport
import Packs
import Plan
import Store
import Testing
import TileFormats

/// `invalidate` and `check-update` of packs read from PMTiles archives: the archive's validator
/// decides; an unchanged archive costs one request, a changed one is compared tile by tile.
@Suite struct ArchiveRevalidationTests {
    static func region(_ url: String) -> [String: Any] { ArchiveDownloadTests.region(url, maxZoom: 5) }

    /// A complete pack of `old` on `upstream`, its harness closed.
    static func downloaded(_ old: ArchiveFixture) throws -> (TemporaryDatabase, ArchiveUpstream, Int64) {
        let database = try TemporaryDatabase()
        let upstream = try ArchiveUpstream(archive: old.bytes)
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let packID = try harness.createQueuedPack(region: region(upstream.url))
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        try #require(harness.waitForState(packID, ["complete", "failed"]) == ["active", "complete"], "\(harness.publishedError(packID) ?? "")")
        return (database, upstream, packID)
    }

    static func invalidate(_ database: TemporaryDatabase, _ packID: Int64) throws -> PackInvalidation {
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        try PackRevalidationTests.invalidate(harness, packID)
        #expect(harness.waitForState(packID, ["complete", "failed"]) == ["active", "complete"], "\(harness.publishedError(packID) ?? "")")
        harness.close()
        return try #require(try StoreReader(path: database.path).pack(packID)?.invalidation)
    }

    @Test func anUnchangedArchiveIsOneConditionalRequestAndEveryRowUnchanged() throws {
        let archive = ArchiveFixture(maxZoom: 5)
        let (database, upstream, packID) = try Self.downloaded(archive)
        defer { upstream.stop(); database.remove() }
        let total = try #require(try StoreReader(path: database.path).progress(packID)).completedResources
        let before = upstream.rangesAsked.count
        let counts = try Self.invalidate(database, packID)
        #expect(counts.unchanged == total && counts.updated == 0 && counts.removed == 0, "\(counts) of \(total)")
        let asked = upstream.rangesAsked.dropFirst(before)
        #expect(asked.count == 1 && asked.first?.ifNoneMatch == "\"v1\"")
        let reader = try StoreReader(path: database.path)
        #expect(try reader.pack(packID)?.version == 1 && reader.versions(of: packID).map(\.version) == [1],
                "an unchanged archive makes no version")
    }

    @Test func aChangedArchiveIsComparedTileByTileAndOnlyWhatChangedIsStored() throws {
        let old = ArchiveFixture(maxZoom: 5, salt: 0)
        let (database, upstream, packID) = try Self.downloaded(old)
        defer { upstream.stop(); database.remove() }
        // The new archive: the same tiles but for a few rows of zoom 5 and one tile now absent.
        var builder = PMTilesArchiveBuilder()
        var changed: Set<String> = []
        var tiles: [PMTilesArchiveBuilder.Tile] = []
        for (path, body) in old.tiles {
            let parts = path.split(separator: "/").compactMap { Int($0) }
            if path == "5/20/10" { continue }
            let change = parts[0] == 5 && parts[2] == 12
            if change { changed.insert(path) }
            tiles.append(.init(z: parts[0], x: parts[1], y: parts[2], bytes: change ? body + [1, 2, 3] : body))
        }
        tiles.sort { HilbertTileID.encode(z: $0.z, x: $0.x, y: $0.y)! < HilbertTileID.encode(z: $1.z, x: $1.x, y: $1.y)! }
        builder.metadata = ["name": "fixture 0", "vector_layers": [["id": "water", "fields": [String: String]()]]]
        upstream.replace(with: builder.build(tiles), etag: "\"v2\"")
        let total = try #require(try StoreReader(path: database.path).progress(packID)).completedResources
        let (key, planned) = try ArchiveDownloadTests.planned(Self.region(upstream.url), archive: old)
        let inRegion = { (path: String) in planned.contains { "\($0.z)/\($0.x)/\($0.y)" == path } }
        let changedInRegion = changed.filter(inRegion).count
        try #require(changedInRegion > 3 && inRegion("5/20/10"))

        let counts = try Self.invalidate(database, packID)
        #expect(counts.updated == Int64(changedInRegion), "the changed tiles (the TileJSON's bytes are the same)")
        #expect(counts.removed == 1)
        #expect(counts.unchanged == total - Int64(changedInRegion) - 1)
        let reader = try StoreReader(path: database.path)
        for tile in planned {
            let path = "\(tile.z)/\(tile.x)/\(tile.y)"
            let stored = try #require(try reader.resource(.tile(TileKey(urlTemplate: key + "/{z}/{x}/{y}", pixelRatio: 1,
                                                                          z: Int64(tile.z), x: Int64(tile.x), y: Int64(tile.y)))))
            let expected = path == "5/20/10" ? nil : changed.contains(path) ? old.tiles[path].map { $0 + [1, 2, 3] } : old.tiles[path]
            #expect(try stored.body?.decoded() == expected, "\(path)")
            #expect(stored.cache.etag == "\"v2\"", "\(path) keeps the old archive's validators")
        }
        // The changed archive is the pack's next version, like any refresh that changed content:
        // the tiles whose bytes differ, the one now absent; the same bytes under a new ETag are no
        // change. Its delta from version 1 holds exactly those tiles.
        let two = try #require(try reader.version(2, of: packID))
        #expect(two.changedResources == Int64(changedInRegion) && two.removedResources == 1, "\(two)")
        let delta = try reader.export(PackExportRequest(pack: packID, version: 2, since: 1),
                                      to: database.directory.path + "/delta.db")
        #expect(delta.tiles == Int64(changedInRegion) + 1 && delta.resources == 0, "\(delta)")
        // Asked again, the archive is unchanged: no version.
        _ = try Self.invalidate(database, packID)
        #expect(try reader.pack(packID)?.version == 2 && reader.versions(of: packID).map(\.version) == [2, 1])
    }

    /// The archive changed, the revalidation opened the new one — and it changes again while its
    /// tiles are read: the revalidation starts over from the newest header (it used to fail with
    /// `source_unavailable`), and the pack ends with the newest archive's tiles only.
    @Test func anArchiveReplacedAgainDuringTheRevalidationStartsItOver() throws {
        let (database, upstream, packID) = try Self.downloaded(ArchiveFixture(maxZoom: 5, salt: 0))
        defer { upstream.stop(); database.remove() }
        let (second, third) = (ArchiveFixture(maxZoom: 5, salt: 1), ArchiveFixture(maxZoom: 5, salt: 2))
        upstream.replace(with: second.bytes, etag: "\"v2\"")
        let before = upstream.rangesAsked.count
        upstream.setScript { count, _ in
            // The first ranges are the conditional request and the new header; then tiles of v2.
            if count == before + 5 { upstream.replace(with: third.bytes, etag: "\"v3\"") }
            return nil
        }
        _ = try Self.invalidate(database, packID)
        let asked = upstream.rangesAsked.dropFirst(before)
        #expect(asked.contains { $0.ifMatch == "\"v2\"" } && asked.contains { $0.ifMatch == "\"v3\"" }, "\(asked.map(\.ifMatch))")
        try ArchiveDownloadTests.expectStored(database, packID: packID, region: Self.region(upstream.url), archive: third,
                                              etag: "\"v3\"")
    }

    @Test func checkUpdateAsksTheArchiveWithItsValidator() throws {
        let archive = ArchiveFixture(maxZoom: 3)
        let (database, upstream, packID) = try Self.downloaded(archive)
        defer { upstream.stop(); database.remove() }
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let checker = try harness.onLoop { PackUpdateChecker(loop: harness.thread.loop, fetcher: harness.fetcher, store: harness.store) }
        func check() throws -> PackUpdateChecker.Outcome {
            let box = Box<PackUpdateChecker.Outcome>()
            try harness.onLoop { checker.check(packID) { box.set($0) } }
            return try #require(box.wait(deadline: .seconds(60)))
        }
        let before = upstream.rangesAsked.count
        #expect(try check() == .checked(updateAvailable: false))
        #expect(upstream.rangesAsked.dropFirst(before).map(\.ifNoneMatch) == ["\"v1\""])
        upstream.replace(with: ArchiveFixture(maxZoom: 3, salt: 4).bytes, etag: "\"v2\"")
        #expect(try check() == .checked(updateAvailable: true))
    }
}
