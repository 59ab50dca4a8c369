import Fetch
import Foundation
import Jobs
import PackdTestSupport
import Packs
import Plan
import Store
import Testing

/// Whole downloads against an in-process upstream, into a real SQLite file.
@Suite struct PackDownloadTests {
    static func region(_ upstream: MapUpstream, maxZoom: Int = 7) -> [String: Any] {
        ["style_url": upstream.base + "/style.json", "bounds": [-20.0, -20.0, 20.0, 20.0], "min_zoom": 0,
         "max_zoom": maxZoom]
    }

    /// Everything the pack must hold, planned from the same documents the upstream serves.
    static func planned(_ upstream: MapUpstream, maxZoom: Int = 7) throws -> [PlannedResource] {
        var builder = PlanBuilder(region: try RegionDefinition(json: region(upstream, maxZoom: maxZoom)))
        try builder.addStyle(Data(upstream.style.utf8))
        try builder.addTileJSON(Data(upstream.tileJSON.utf8), url: upstream.base + "/tiles.json")
        return Array(builder.plan)
    }

    /// The row a planned resource is stored under.
    static func storedKey(_ resource: PlannedResource) -> ResourceKey {
        resource.tile.map {
            .tile(TileKey(urlTemplate: $0.urlTemplate, pixelRatio: Int64($0.pixelRatio), z: Int64($0.z),
                          x: Int64($0.x), y: Int64($0.y)))
        } ?? .resource(url: resource.url, kind: resource.kind)
    }

    static func path(_ url: String, _ upstream: MapUpstream) -> String {
        String(url.dropFirst(upstream.base.count))
    }

    @Test func stylePackCompletesWithEveryBodyStoredExactly() throws {
        let run = try DownloadRun()
        defer { run.close() }
        let (database, upstream, harness, packID) = (run.database, run.upstream, run.harness, run.packID)
        #expect(run.finish() == ["active", "complete"], "\(harness.publishedError(packID) ?? "")")
        harness.close()

        let planned = try Self.planned(upstream)
        let tiles = planned.filter { $0.kind == .tile }
        #expect(tiles.count > 100 && planned.count - tiles.count > 3)
        let reader = try StoreReader(path: database.path)
        for resource in planned {
            let stored = try #require(try reader.resource(Self.storedKey(resource)), "\(resource.url) not stored")
            let expected = upstream.body(for: Self.path(resource.url, upstream))
            #expect(try stored.body?.decoded() == expected, "\(resource.url)")
        }
        let record = try #require(try reader.pack(packID))
        let progress = try #require(try reader.progress(packID))
        #expect(record.expectedIsPrecise)
        #expect(record.expectedResources == Int64(planned.count))
        #expect(record.expectedTiles == Int64(tiles.count))
        #expect(progress.completedResources == Int64(planned.count))
        #expect(progress.completedTiles == Int64(tiles.count))
        #expect(harness.publishedProgress(packID) == progress)
        #expect(harness.publishedExpected(packID) == ExpectedCounts(
            resources: Int64(planned.count), tiles: Int64(tiles.count), precise: true))
        // Each resource fetched once (the style and TileJSON are not fetched a second time to be stored).
        let paths = upstream.requests.map(\.target)
        #expect(paths.count == planned.count)
        #expect(Set(paths).count == paths.count)
    }

    /// Runs a pack whose style answers `status`; returns the states it went through and its error.
    static func runWithStyleStatus(_ status: Int) throws -> (states: [String], error: String?, requests: [String],
                                                               stored: PackRecord?) {
        let run = try DownloadRun(faults: .init(styleStatus: status))
        defer { run.close() }
        let states = run.finish(deadline: .seconds(30))
        return (states, run.harness.publishedError(run.packID), run.upstream.requests.map(\.target),
                try StoreReader(path: run.database.path).pack(run.packID))
    }

    /// Upstreams that gzip their JSON (nginx's `gzip on`) are read: Fetch hands the body over
    /// still encoded, and the style and TileJSON parsers need it inflated.
    @Test func gzipEncodedStyleAndTileJSONAreRead() throws {
        var faults = MapUpstream.Faults()
        faults.gzipDocuments = true
        let run = try DownloadRun(faults: faults, maxZoom: 3)
        defer { run.close() }
        #expect(run.finish() == ["active", "complete"], "\(run.harness.publishedError(run.packID) ?? "")")
        let reader = try StoreReader(path: run.database.path)
        let style = try #require(try reader.resource(.resource(url: run.upstream.base + "/style.json", kind: .style)))
        #expect(try style.body?.decoded() == Array(run.upstream.style.utf8))
        #expect(run.harness.publishedExpected(run.packID)?.precise == true)
    }

    @Test func forbiddenStyleFailsAtOnceAsUnauthorized() throws {
        let run = try Self.runWithStyleStatus(403)
        #expect(run.states == ["active", "failed"])
        let error = try #require(run.error)
        #expect(error.contains(#""code":"upstream_unauthorized""#) && error.contains(#""status":403"#))
        #expect(run.requests == ["/style.json"])
        #expect(run.stored?.state == .failed && run.stored?.error.flatMap { try? SortedJSONEncoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) } == error)
    }

    @Test func missingStyleFailsAsStyleUnavailable() throws {
        let run = try Self.runWithStyleStatus(404)
        #expect(run.states == ["active", "failed"])
        #expect(run.error?.contains(#""code":"style_unavailable""#) == true)
        #expect(run.requests == ["/style.json"])
    }

    @Test func tileLimitReachedFailsThePackInsteadOfCompletingIt() throws {
        let run = try DownloadRun { harness in try harness.performAndWait { try $0.setTileLimit(20) } }
        defer { run.close() }
        let (database, harness, packID) = (run.database, run.harness, run.packID)
        #expect(run.finish() == ["active", "failed"])
        #expect(harness.publishedError(packID)?.contains(#""code":"tile_limit_exceeded""#) == true)
        #expect(try harness.onLoop { harness.scheduler.activePackIDs }.isEmpty)
        let progress = try #require(try StoreReader(path: database.path).progress(packID))
        #expect(progress.completedTiles <= 20)
    }

    @Test func styleRegionOverItsMaxTilesFailsBeforeAnyTileIsFetched() throws {
        let run = try DownloadRun(limits: PackLimits(maxTiles: 10))
        defer { run.close() }
        #expect(run.finish() == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(error.contains(#""code":"tile_limit_exceeded""#) && error.contains("limit is 10"))
        #expect(run.upstream.requests.map(\.target) == ["/style.json", "/tiles.json"])
    }

    @Test func unauthorizedTileFailsThePackAtOnce() throws {
        let run = try DownloadRun(faults: .init(tileStatus: 401))
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(30)) == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(error.contains(#""code":"upstream_unauthorized""#) && error.contains(#""status":401"#))
        // Stopped at the first refusal: at most the transfers already in flight reached the upstream.
        let tileRequests = run.upstream.requests.filter { $0.target.hasPrefix("/tiles/") }.count
        #expect(tileRequests >= 1 && tileRequests <= JobsHarness.fastRetries.maxInFlight)
    }

    @Test func tenPercentServerErrorsStillComplete() throws {
        let run = try DownloadRun(faults: .init(failEvery: 10), maxZoom: 5)
        defer { run.close() }
        let (database, upstream, harness, packID) = (run.database, run.upstream, run.harness, run.packID)
        let states = run.finish()
        harness.close()
        #expect(states.last == "complete", "\(harness.publishedError(packID) ?? "")")
        let planned = try Self.planned(upstream, maxZoom: 5)
        let progress = try #require(try StoreReader(path: database.path).progress(packID))
        #expect(progress.completedResources == Int64(planned.count))
        #expect(progress.failedResources == 0)
        // The 500s were retried: more requests than resources.
        #expect(upstream.requests.count > planned.count)
    }

    @Test func suspendStopsTransfersAndRestartSkipsStoredTiles() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let upstream = try MapUpstream(faults: .init(tileDelay: .milliseconds(5)))
        defer { upstream.stop() }
        let settings = DownloadSettings(maxInFlight: 4, initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(50))
        var harness = try JobsHarness(path: database.path, settings: settings)
        let packID = try harness.createQueuedPack(region: Self.region(upstream))
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForProgress(packID) { $0.completedTiles >= 40 })

        // Suspend as the API does: the state first, then the scheduler's hook.
        _ = try harness.performAndWait { try $0.setPackState(packID, state: .inactive, error: nil, now: 0) }
        let first = harness
        try first.onLoop { first.scheduler.packSuspended(packID) }
        let idle = Box<Bool>()
        let started = ContinuousClock.now
        @Sendable func poll() {
            first.thread.loop.execute {
                if first.fetcher.runningCount + first.fetcher.waitingCount == 0 {
                    idle.set(true)
                } else if ContinuousClock.now - started > .seconds(1) {
                    idle.set(false)
                } else {
                    poll()
                }
            }
        }
        poll()
        #expect(idle.wait(deadline: .seconds(10)) == true, "transfers still running a second after suspend")
        #expect(try first.onLoop { first.scheduler.activePackIDs }.isEmpty)
        harness.close()
        let stored = Set(try Self.planned(upstream).filter { resource in
            guard let tile = resource.tile else { return false }
            return try StoreReader(path: database.path).resource(.tile(TileKey(
                urlTemplate: tile.urlTemplate, pixelRatio: Int64(tile.pixelRatio), z: Int64(tile.z),
                x: Int64(tile.x), y: Int64(tile.y)))) != nil
        }.map { Self.path($0.url, upstream) })
        #expect(stored.count >= 40)
        let requestsBeforeRestart = upstream.requests.count

        // Restart: a new scheduler on the same database continues the pack.
        harness = try JobsHarness(path: database.path, settings: settings)
        defer { harness.close() }
        _ = try harness.performAndWait { try $0.setPackState(packID, state: .queued, error: nil, now: 0) }
        let second = harness
        try second.onLoop { second.scheduler.start() }
        #expect(second.waitForState(packID, ["complete", "failed"]).last == "complete")
        let refetched = upstream.requests.dropFirst(requestsBeforeRestart).map(\.target).filter(stored.contains)
        #expect(refetched.isEmpty, "stored tiles fetched again: \(refetched.prefix(5))")
        let progress = try #require(try StoreReader(path: database.path).progress(packID))
        #expect(progress.completedResources == Int64(try Self.planned(upstream).count))
    }

    /// A download stopped before its style arrived (a suspend or delete early in the pack, or a
    /// cluster unit given up) is released once the fetcher has delivered the cancelled request:
    /// its document phase holds the download as its source until the phase ends, and a stopped
    /// phase never ends. Kept, the two held the fetcher, the store and the loop until exit
    /// (LeakSanitizer in `packd serve` cluster nodes, issue 17).
    @Test func downloadStoppedInItsDocumentPhaseIsReleased() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let upstream = try MapUpstream(faults: .init(everything: .hang))
        defer { upstream.stop() }
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let packID = try harness.createQueuedPack(region: Self.region(upstream))
        let region = try RegionDefinition(json: Self.region(upstream))
        let owner = SilentJobOwner()
        let download = try harness.onLoop { () -> WeakReference<PackDownload> in
            let download = PackDownload(packID: packID, region: region, limits: PackLimits(), loop: harness.thread.loop,
                                        fetcher: harness.fetcher, store: harness.store, settings: JobsHarness.fastRetries,
                                        clock: .system, owner: owner, listener: nil)
            download.start()
            // Still in the document phase: the style's answer can only come on a later turn.
            download.stop()
            return WeakReference(download)
        }
        let released = Box<Bool>()
        let deadline = ContinuousClock.now + .seconds(30)
        @Sendable func poll() {
            harness.thread.loop.execute {
                if harness.fetcher.transferCount(owner: UInt64(bitPattern: packID)) == 0 {
                    released.set(download.value == nil)
                } else if ContinuousClock.now > deadline {
                    released.set(false)
                } else {
                    poll()
                }
            }
        }
        poll()
        #expect(released.wait(deadline: .seconds(60)) == true, "the stopped download is still alive")
    }
}

/// A job owner that ignores what its job reports.
private final class SilentJobOwner: JobOwner {
    func jobPlanKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool { true }
    func jobLinked(_ packID: Int64, _ progress: StoredProgress) {}
    func jobCounted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {}
    func jobEnded(_ packID: Int64, _ event: PackLifecycle.Event) {}
}

/// A weak reference a loop callback can hand to the test's thread.
private final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    weak var value: Object?
    init(_ value: Object) { self.value = value }
}

/// One queued pack against its own upstream and database: the common set-up of these tests.
/// A pack downloading on a harness of its own, against an upstream of the test's.
protocol PackRun {
    var harness: JobsHarness { get }
    var packID: Int64 { get }
}

extension PackRun {
    /// Waits for `complete` or `failed`; returns the states published on the way.
    func finish(deadline: Duration = .seconds(120)) -> [String] {
        harness.waitForState(packID, ["complete", "failed"], deadline: deadline)
    }
}

final class DownloadRun: PackRun {
    let database: TemporaryDatabase
    let upstream: MapUpstream
    let harness: JobsHarness
    let packID: Int64

    init(faults: MapUpstream.Faults = .init(), maxZoom: Int = 7, limits: PackLimits = PackLimits(),
         settings: DownloadSettings = JobsHarness.fastRetries,
         fetch: FetchConfiguration = FetchConfiguration(addressPolicy: .loopbackForTests), host: String = "127.0.0.1",
         prepare: (JobsHarness) throws -> Void = { _ in }) throws {
        database = try TemporaryDatabase()
        upstream = try MapUpstream(faults: faults, host: host)
        harness = try JobsHarness(path: database.path, settings: settings, fetch: fetch)
        try prepare(harness)
        packID = try harness.createQueuedPack(region: PackDownloadTests.region(upstream, maxZoom: maxZoom),
                                              limits: limits)
        let harness = harness
        let packID = packID
        try harness.onLoop { harness.scheduler.packQueued(packID) }
    }

    func close() {
        harness.close()
        upstream.stop()
        database.remove()
    }
}
