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
        // Each leaf directory read once.
        let header = try PMTilesHeader(decoding: Array(archive.bytes.prefix(PMTilesHeader.size)))
        let leafReads = asked.compactMap(\.range).filter {
            $0.lowerBound >= header.leafDirectoriesOffset && $0.lowerBound < header.leafDirectoriesOffset + header.leafDirectoriesLength
        }
        #expect(Set(leafReads.map(\.lowerBound)).count == leafReads.count)
        if layout.leaves { #expect(!leafReads.isEmpty) }
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
         settings: DownloadSettings = JobsHarness.fastRetries, limits: PackLimits = PackLimits(),
         prepare: (ArchiveUpstream) -> Void = { _ in }) throws {
        database = try TemporaryDatabase()
        upstream = try ArchiveUpstream(archive: archive.bytes, etag: etag)
        prepare(upstream)
        harness = try JobsHarness(path: database.path, settings: settings)
        packID = try harness.createQueuedPack(region: region(upstream.url), limits: limits)
        let (harness, packID) = (harness, packID)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
    }

    func close() {
        harness.close()
        upstream.stop()
        database.remove()
    }
}

/// The faults of a remote archive.
@Suite struct ArchiveFaultTests {
    @Test func anArchiveReplacedMidDownloadRestartsFromItsNewHeaderAndNothingOfTheOldStays() throws {
        let old = ArchiveFixture(maxZoom: 6, salt: 0)
        let new = ArchiveFixture(maxZoom: 6, salt: 1)
        let run = try ArchiveRun(archive: old, region: { ArchiveDownloadTests.region($0) }) { upstream in
            upstream.setScript { count, _ in
                // Mid-download: a few tile ranges went out (and came back) from the old archive.
                if count == 8 { upstream.replace(with: new.bytes, etag: "\"v2\"") }
                return nil
            }
        }
        defer { run.close() }
        #expect(run.finish() == ["active", "complete"], "\(run.harness.publishedError(run.packID) ?? "")")
        run.harness.close()
        let asked = run.upstream.rangesAsked
        #expect(asked.contains { $0.ifMatch == "\"v1\"" } && asked.contains { $0.ifMatch == "\"v2\"" })
        // Every tile of the region as the new archive has it, every row with the new ETag.
        try ArchiveDownloadTests.expectStored(run.database, packID: run.packID, region: ArchiveDownloadTests.region(run.upstream.url),
                                              archive: new, etag: "\"v2\"")
    }

    @Test func aServerIgnoringRangeFailsThePackWithoutDownloadingTheArchive() throws {
        let archive = ArchiveFixture(maxZoom: 3)
        let run = try ArchiveRun(archive: archive, region: { ArchiveDownloadTests.region($0) }) { upstream in
            upstream.setFault(.ignoreRange(declared: 64 << 30))
        }
        defer { run.close() }
        #expect(run.finish() == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(error.contains(#""code":"range_not_supported""#), "\(error)")
        #expect(run.upstream.rangesAsked.count == 1, "not retried")
        #expect(eventually { run.upstream.bytesSentIgnoringRange > 0 })
        #expect(run.upstream.bytesSentIgnoringRange < 64 << 20)
    }

    @Test func truncatedRangeAnswersAreRetriedAndTheTilesStoredWhole() throws {
        let archive = ArchiveFixture(maxZoom: 6)
        let run = try ArchiveRun(archive: archive, region: { ArchiveDownloadTests.region($0) }) { upstream in
            upstream.setFault(.truncateEvery(3))
        }
        defer { run.close() }
        #expect(run.finish() == ["active", "complete"], "\(run.harness.publishedError(run.packID) ?? "")")
        run.harness.close()
        try ArchiveDownloadTests.expectStored(run.database, packID: run.packID, region: ArchiveDownloadTests.region(run.upstream.url),
                                              archive: archive, etag: "\"v1\"")
    }

    @Test func rangesAnswered416AreAShorterArchiveAndEndThePackAfterItsRestarts() throws {
        let archive = ArchiveFixture(maxZoom: 5)
        let size = archive.bytes.count
        let tileData = try PMTilesHeader(decoding: Array(archive.bytes.prefix(PMTilesHeader.size))).tileDataOffset
        let run = try ArchiveRun(archive: archive, region: { ArchiveDownloadTests.region($0, maxZoom: 5) }) { upstream in
            upstream.setScript { _, request in
                // The header and directories are there; every tile range is past the end.
                guard let range = request.headers["range"].flatMap(ArchiveUpstream.parseRange),
                      range.lowerBound >= tileData else { return nil }
                return .respond(status: 416, headers: [("Content-Range", "bytes */\(size)"), ("ETag", "\"v1\"")])
            }
        }
        defer { run.close() }
        #expect(run.finish() == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(error.contains(#""code":"source_unavailable""#) && error.contains("416"), "\(error)")
    }

    /// A pack's bandwidth cap holds for range requests as for tiles: each range is one transfer
    /// the budget lets start, its bytes charged as they arrive.
    @Test func theBandwidthCapHoldsForRangeRequests() throws {
        let archive = ArchiveFixture(maxZoom: 6)
        var settings = JobsHarness.fastRetries
        settings.archive.maxSpan = 32 << 10
        let cap: Int64 = 200_000
        let started = ContinuousClock.now
        let run = try ArchiveRun(archive: archive, region: { ArchiveDownloadTests.region($0) }, settings: settings,
                                 limits: PackLimits(maxTiles: nil, maxBytesPerSecond: cap))
        defer { run.close() }
        #expect(run.finish() == ["active", "complete"], "\(run.harness.publishedError(run.packID) ?? "")")
        let elapsed = (ContinuousClock.now - started).seconds
        let bytes = Double(run.upstream.bytesServed)
        // At most the cap over the run, plus its half-second burst and one range.
        #expect(bytes > 3 * Double(cap), "enough bytes for the cap to matter")
        #expect(bytes <= Double(cap) * elapsed + Double(cap) / 2 + Double(settings.archive.maxSpan) * 2, "\(bytes) bytes in \(elapsed) s")
    }

    @Test func aStylesPMTilesSourceIsStoredByKeyWithItsTileJSONAndTiles() throws {
        let archive = ArchiveFixture(maxZoom: 4)
        let run = try ArchiveRun(archive: archive, region: { url in
            ["style_url": url.replacingOccurrences(of: "/maps/world.pmtiles", with: "/style.json"),
             "bounds": [-30.0, -30.0, 30.0, 30.0], "min_zoom": 0, "max_zoom": 3]
        }) { upstream in
            let style = #"{"version": 8, "sources": {"world": {"type": "vector", "url": "pmtiles://\#(upstream.url)"}}, "#
                + #""layers": [{"id": "water", "type": "fill", "source": "world", "source-layer": "water"}]}"#
            upstream.setScript { _, request in request.target == "/style.json" ? .respond(status: 200, body: Array(style.utf8)) : nil }
        }
        defer { run.close() }
        #expect(run.finish() == ["active", "complete"], "\(run.harness.publishedError(run.packID) ?? "")")
        run.harness.close()
        let key = PMTilesSourceURL.key(forArchive: run.upstream.url)
        let reader = try StoreReader(path: run.database.path)
        let styleURL = run.upstream.url.replacingOccurrences(of: "/maps/world.pmtiles", with: "/style.json")
        let style = try #require(try reader.resource(.resource(url: styleURL, kind: .style))?.body?.decoded())
        let sources = try #require((try JSONSerialization.jsonObject(with: Data(style)) as? [String: Any])?["sources"] as? [String: Any])
        #expect((sources["world"] as? [String: Any])?["url"] as? String == key, "the stored style names the archive by key")
        let tileJSON = try #require(try reader.resource(.resource(url: key, kind: .source))?.body?.decoded())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(tileJSON)) as? [String: Any])
        #expect(object["tiles"] as? [String] == [key + "/{z}/{x}/{y}"])
        #expect((object["vector_layers"] as? [[String: Any]])?.first?["id"] as? String == "water")
        // 512 px vector tiles: the region's zooms 0…3 cover tiles of zooms 0…3 (and the archive has 0…4).
        let stored = try #require(try reader.progress(run.packID))
        #expect(try reader.pack(run.packID)?.expectedResources == stored.completedResources)
        let tile = try #require(try reader.resource(.tile(TileKey(urlTemplate: key + "/{z}/{x}/{y}", pixelRatio: 1, z: 1, x: 1, y: 1))))
        #expect(try tile.body?.decoded() == archive.tiles["1/1/1"])
    }
}

/// The chaos test's faults applied to range requests: 500s, resets, truncated 206s, 429 with
/// `Retry-After`, slow 503s, at random (seeded; the seed is printed) on every read of the
/// archive. The pack completes with every tile as the archive has it.
@Suite struct ArchiveChaosTests {
    final class Dice: @unchecked Sendable {
        private let seed: UInt64
        private var rolled: UInt64 = 0
        private let lock = NSLock()
        private(set) var counts: [String: Int] = [:]

        init(seed: UInt64) { self.seed = seed }

        /// The n-th roll is the same for a seed: a failing run replays.
        func roll(_ request: TestUpstream.Request) -> TestUpstream.Reply? {
            lock.withLock {
                rolled += 1
                let value = randomBytes(count: 8, seed: seed &+ rolled).withUnsafeBytes { $0.load(as: UInt64.self) }
                let fault: (String, TestUpstream.Reply)? = switch Double(value % 10_000) / 100 {
                case ..<10: ("500", .respond(status: 500))
                case ..<15: ("reset", .reset)
                case ..<18: ("429", .respond(status: 429, headers: [("Retry-After", counts["429", default: 0] % 10 == 0 ? "1" : "0")]))
                case ..<19: ("slow 503", .delayed(.milliseconds(300), .respond(status: 503)))
                default: nil
                }
                guard let fault else { return nil }
                counts[fault.0, default: 0] += 1
                return fault.1
            }
        }
    }

    @Test func chaoticRangeAnswersStillYieldAnExactPack() throws {
        let seed = ProcessInfo.processInfo.environment["PACKD_CHAOS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
        print("archive chaos seed \(seed) (replay with PACKD_CHAOS_SEED=\(seed))")
        let dice = Dice(seed: seed)
        let archive = ArchiveFixture(maxZoom: 7)
        var limits = ArchiveLimits()
        limits.maxSpan = 32 << 10  // many small ranges: many rolls of the dice
        var settings = DownloadSettings(maxInFlight: 16, maxAttempts: 12, initialBackoff: .milliseconds(5),
                                        maxBackoff: .milliseconds(200), watchdogInterval: .milliseconds(200))
        settings.archive = limits
        let run = try ArchiveRun(archive: archive, region: { ArchiveDownloadTests.region($0, maxZoom: 7) },
                                 settings: settings) { upstream in
            upstream.setFault(.truncateEvery(13))
            upstream.setScript { _, request in dice.roll(request) }
        }
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(300)) == ["active", "complete"], "\(run.harness.publishedError(run.packID) ?? "")")
        run.harness.close()
        print("archive chaos: \(run.upstream.rangesAsked.count) reads, faults \(dice.counts)")
        #expect(["500", "reset", "429"].allSatisfy { dice.counts[$0, default: 0] > 0 })
        try ArchiveDownloadTests.expectStored(run.database, packID: run.packID,
                                              region: ArchiveDownloadTests.region(run.upstream.url, maxZoom: 7),
                                              archive: archive, etag: "\"v1\"")
    }
}
