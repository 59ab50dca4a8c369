import Fetch
import Foundation
import Geo
import Jobs
import PackdTestSupport
import Packs
import Plan
import Store
import Testing
import TileFormats

/// Packs read out of PMTiles archives (made with TileFormats' writer) served by the in-process
/// archive server, into real SQLite files: every tile byte-identical, exact counts, few requests,
/// every request validated, and the faults a remote archive brings.
@Suite struct ArchiveDownloadTests {
    static let bounds = [-100.0, -50.0, 120.0, 60.0]

    static func region(_ url: String, maxZoom: Int = 6, bounds: [Double] = bounds) -> [String: Any] {
        ["pmtiles": url, "bounds": bounds, "min_zoom": 0, "max_zoom": maxZoom]
    }

    /// The tiles the region's plan holds, from the archive's own TileJSON.
    static func planned(_ region: [String: Any], archive: ArchiveFixture) throws -> (key: String, tiles: [TileAddress]) {
        let definition = try RegionDefinition(json: region)
        guard case .archive(let url) = definition.content else { throw HarnessTimeout() }
        let key = PMTilesSourceURL.key(forArchive: url)
        let header = try PMTilesHeader(decoding: Array(archive.bytes.prefix(PMTilesHeader.size)))
        var builder = PlanBuilder(region: definition)
        try builder.addTileJSON(Data(PMTilesTileJSON.document(header: header, metadata: [:], key: key)), url: key)
        return (key, builder.plan.compactMap(\.tile))
    }

    /// Every planned tile is stored as the archive has it (no content where it has none), every
    /// tile row carries the archive's validators, and the pack counts exactly its plan.
    static func expectStored(_ database: TemporaryDatabase, packID: Int64, region: [String: Any], archive: ArchiveFixture,
                             etag: String?) throws {
        let (key, tiles) = try planned(region, archive: archive)
        let reader = try StoreReader(path: database.path)
        var present = 0
        for tile in tiles {
            let stored = try #require(try reader.resource(.tile(TileKey(urlTemplate: tile.urlTemplate, pixelRatio: 1, z: Int64(tile.z),
                                                                          x: Int64(tile.x), y: Int64(tile.y)))),
                                      "\(tile.z)/\(tile.x)/\(tile.y) not stored")
            let expected = archive.tiles["\(tile.z)/\(tile.x)/\(tile.y)"]
            #expect(try stored.body?.decoded() == expected, "\(tile.z)/\(tile.x)/\(tile.y)")
            #expect(stored.cache.etag == etag, "\(tile.z)/\(tile.x)/\(tile.y) stored from another archive")
            if expected != nil { present += 1 }
        }
        #expect(present > tiles.count / 2 && present < tiles.count, "the fixture has absent tiles")
        let tileJSON = try #require(try reader.resource(.resource(url: key, kind: .source)))
        #expect(tileJSON.cache.etag == etag)
        let progress = try #require(try reader.progress(packID))
        let record = try #require(try reader.pack(packID))
        #expect(record.expectedTiles == Int64(tiles.count) && record.expectedResources == Int64(tiles.count + 1))
        #expect(progress.completedTiles == Int64(tiles.count) && progress.completedResources == Int64(tiles.count + 1))
    }

    @Test(arguments: [
        ArchiveFixture.Layout(),
        ArchiveFixture.Layout(clustered: false),
        ArchiveFixture.Layout(tileCompression: .none, internalCompression: .none),
        ArchiveFixture.Layout(leaves: false),
    ])
    func everyTileOfTheRegionIsStoredFromItsArchiveWithFewRequests(layout: ArchiveFixture.Layout) throws {
        let archive = ArchiveFixture(maxZoom: 6, layout: layout)
        let run = try ArchiveRun(archive: archive, region: { Self.region($0) })
        defer { run.close() }
        #expect(run.finish() == ["active", "complete"], "\(run.harness.publishedError(run.packID) ?? "")")
        run.harness.close()
        try Self.expectStored(run.database, packID: run.packID, region: Self.region(run.upstream.url), archive: archive,
                              etag: "\"v1\"")
        let asked = run.upstream.rangesAsked
        let tiles = try Self.planned(Self.region(run.upstream.url), archive: archive).tiles.count
        #expect(asked.count * 20 <= tiles, "\(asked.count) requests for \(tiles) tiles")
        #expect(asked.dropFirst().allSatisfy { $0.ifMatch == "\"v1\"" }, "every read after the first carries the archive's ETag")
        let progress = try #require(try StoreReader(path: run.database.path).progress(run.packID))
        #expect(progress.archiveRequests == Int64(asked.count))
        #expect(progress.archiveBytes == Int64(run.upstream.bytesServed))
    }
}

/// One pack over an archive server, on a harness of its own.
final class ArchiveRun: PackRun {
    let database: TemporaryDatabase
    let upstream: ArchiveUpstream
    let harness: JobsHarness
    let packID: Int64

    init(archive: ArchiveFixture, etag: String? = "\"v1\"", region: (String) -> [String: Any],
         settings: DownloadSettings = JobsHarness.fastRetries, prepare: (ArchiveUpstream) -> Void = { _ in }) throws {
        database = try TemporaryDatabase()
        upstream = try ArchiveUpstream(archive: archive.bytes, etag: etag)
        prepare(upstream)
        harness = try JobsHarness(path: database.path, settings: settings)
        packID = try harness.createQueuedPack(region: region(upstream.url))
        let (harness, packID) = (harness, packID)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
    }

    func close() {
        harness.close()
        upstream.stop()
        database.remove()
    }
}
