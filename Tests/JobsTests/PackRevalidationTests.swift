import Fetch
import Foundation
import Jobs
import PackdTestSupport
import Packs
import Store
import Testing

/// `invalidate` and `check-update` against an upstream whose content changes after download,
/// into a real SQLite file.
@Suite struct PackRevalidationTests {
    /// Downloads a pack from `upstream` to `complete` with a harness of its own (closed after), so
    /// each test starts its revalidation on a freshly opened database as after a restart.
    static func downloadedPack(_ upstream: RevisedUpstream, _ database: TemporaryDatabase) throws -> Int64 {
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let packID = try harness.createQueuedPack(region: upstream.region)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        let states = harness.waitForState(packID, ["complete", "failed"])
        try #require(states == ["active", "complete"], "\(harness.publishedError(packID) ?? "")")
        return packID
    }

    /// Every tile the pack stored, as the upstream path it came from.
    static func storedTilePaths(_ database: TemporaryDatabase, _ packID: Int64) throws -> [(key: ResourceKey, path: String)] {
        try StoreReader(path: database.path).tileValidators(packID: packID, afterRowID: 0, limit: 100_000).map { row in
            guard case .tile(let tile) = row.key else { return (row.key, "") }
            return (row.key, "/tiles/\(tile.z)/\(tile.x)/\(tile.y).pbf")
        }
    }

    /// Starts a revalidation as the API does: `complete` → `queued` with zeroed counts, then the scheduler.
    static func invalidate(_ harness: JobsHarness, _ packID: Int64) throws {
        let start = try harness.performAndWait { try $0.transition(packID, .invalidate, now: Int64(Date().timeIntervalSince1970)) }
        guard case .applied(let transition) = start, transition.to == .queued else {
            Issue.record("invalidate was not applied: \(start)")
            return
        }
        try harness.onLoop { harness.scheduler.packQueued(packID) }
    }

    @Test func invalidateReplacesWhatChangedRemovesWhatIsGoneAndCountsTheRest() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        defer { upstream.stop(); database.remove() }
        let packID = try Self.downloadedPack(upstream, database)
        let total = try #require(try StoreReader(path: database.path).progress(packID)).completedResources
        let tiles = try Self.storedTilePaths(database, packID)
        try #require(tiles.count > 25)
        let changed = Array(tiles[5..<15])
        let removed = Array(tiles[20..<23])
        upstream.change(tiles: changed.map(\.path))
        upstream.remove(tiles: removed.map(\.path))
        let requestsBefore = upstream.requests.count

        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let published = InvalidationLog()
        try harness.onLoop { harness.onRevalidation = { _, counts in published.append(counts) } }
        try Self.invalidate(harness, packID)
        #expect(harness.waitForState(packID, ["complete", "failed"]) == ["active", "complete"],
                "\(harness.publishedError(packID) ?? "")")
        harness.close()

        let reader = try StoreReader(path: database.path)
        let invalidation = try #require(try reader.pack(packID)?.invalidation)
        #expect(invalidation.unchanged == total - 13)
        #expect(invalidation.updated == 10)
        #expect(invalidation.removed == 3)
        #expect(invalidation.completedAt != nil)
        #expect(published.last == invalidation, "the last event carries the committed counts")
        for tile in changed {
            #expect(try reader.resource(tile.key)?.body?.decoded() == upstream.body(for: tile.path), "\(tile.path)")
        }
        for tile in removed {
            let stored = try #require(try reader.resource(tile.key))
            #expect(stored.body == nil, "\(tile.path) is stored as no content")
        }
        // Each stored row asked for once, each time with its stored ETag.
        let revalidation = upstream.requests.dropFirst(requestsBefore)
        #expect(revalidation.count == Int(total))
        #expect(revalidation.allSatisfy { $0.headers["if-none-match"] != nil && $0.headers["if-modified-since"] != nil })
        // Progress still counts every stored resource (a removed tile is complete as no content).
        #expect(try reader.progress(packID)?.completedResources == total)
        #expect(try reader.recountProgress(packID) == reader.progress(packID))
    }

    @Test func fullAnswersWithTheStoredBytesCountAsUnchanged() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        defer { upstream.stop(); database.remove() }
        let packID = try Self.downloadedPack(upstream, database)
        let total = try #require(try StoreReader(path: database.path).progress(packID)).completedResources
        let changed = try #require(try Self.storedTilePaths(database, packID).last)
        upstream.ignoreValidators()
        upstream.change(tiles: [changed.path])
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        try Self.invalidate(harness, packID)
        #expect(harness.waitForState(packID, ["complete", "failed"]) == ["active", "complete"])
        harness.close()
        let reader = try StoreReader(path: database.path)
        let invalidation = try #require(try reader.pack(packID)?.invalidation)
        #expect(invalidation.unchanged == total - 1 && invalidation.updated == 1 && invalidation.removed == 0)
        let stored = try #require(try reader.resource(changed.key))
        let body = try #require(upstream.body(for: changed.path))
        #expect(try stored.body?.decoded() == body)
        #expect(stored.cache.etag == RevisedUpstream.etag(of: body), "the new validator is stored with the new bytes")
    }

    @Test func tilesThatKeepFailingFailThePackAndKeepTheirStoredCopies() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        defer { upstream.stop(); database.remove() }
        let packID = try Self.downloadedPack(upstream, database)
        let tile = try #require(try Self.storedTilePaths(database, packID).first)
        let before = try #require(try StoreReader(path: database.path).resource(tile.key)?.body)
        upstream.fail(tile.path, status: 500)
        upstream.change(tiles: [tile.path])

        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        try Self.invalidate(harness, packID)
        #expect(harness.waitForState(packID, ["complete", "failed"]) == ["active", "failed"])
        let error = try #require(harness.publishedError(packID))
        #expect(error.contains(#""code":"resources_failed""#), "\(error)")
        harness.close()
        let reader = try StoreReader(path: database.path)
        #expect(try reader.resource(tile.key)?.body == before, "the stored copy stays")
        #expect(try reader.pack(packID)?.invalidation?.completedAt != nil)
        #expect(try reader.failures(packID: packID).map(\.url).contains { $0.hasSuffix(tile.path) })
        // Every attempt (first try and retries) was conditional.
        #expect(upstream.requests.filter { $0.target == tile.path }.dropFirst().allSatisfy { $0.headers["if-none-match"] != nil })
    }

    @Test func aRevalidationLeftActiveByARestartStartsOverWhenTheSchedulerStarts() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        defer { upstream.stop(); database.remove() }
        let packID = try Self.downloadedPack(upstream, database)
        let total = try #require(try StoreReader(path: database.path).progress(packID)).completedResources
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        // As a crash leaves it: `active`, counts part-way, not completed.
        _ = try harness.performAndWait { database in
            _ = try database.transition(packID, .invalidate, now: 1)
            try database.setPackState(packID, state: .active, error: nil, now: 1)
            return try database.recordInvalidation(packID, unchanged: 5, updated: 1, removed: 0, completedAt: nil) != nil
        }
        try harness.onLoop { harness.scheduler.start() }
        #expect(harness.waitForState(packID, ["complete", "failed"]).last == "complete")
        let invalidation = try #require(try StoreReader(path: database.path).pack(packID)?.invalidation)
        #expect(invalidation.unchanged == total && invalidation.updated == 0 && invalidation.completedAt != nil)
    }

    @Test func suspendStopsARevalidationAtOnceAndResumeStartsItOver() throws {
        let run = try RevalidationUnderWay()
        defer { run.close() }
        let (upstream, database, harness, packID) = (run.upstream, run.database, run.harness, run.packID)
        let total = try #require(try StoreReader(path: database.path).progress(packID)).completedResources
        let suspendedAt = ContinuousClock.now
        _ = try harness.performAndWait { try $0.setPackState(packID, state: .inactive, error: nil, now: 0) }
        try harness.onLoop { harness.scheduler.packSuspended(packID) }
        #expect(Self.becomesIdle(harness) && ContinuousClock.now - suspendedAt < .seconds(1))
        let invalidation = try #require(try StoreReader(path: database.path).pack(packID)?.invalidation)
        #expect(invalidation.completedAt == nil, "an interrupted revalidation is not reported as done")
        #expect(try StoreReader(path: database.path).pack(packID)?.state == .inactive)

        upstream.delayTiles(nil)
        _ = try harness.performAndWait { try $0.setPackState(packID, state: .queued, error: nil, now: 0) }
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["complete", "failed"]).last == "complete")
        let resumed = try #require(try StoreReader(path: database.path).pack(packID)?.invalidation)
        #expect(resumed.unchanged == total && resumed.updated == 0 && resumed.removed == 0 && resumed.completedAt != nil)
    }

    @Test func deleteStopsARevalidationAtOnce() throws {
        let run = try RevalidationUnderWay()
        defer { run.close() }
        let (database, harness, packID) = (run.database, run.harness, run.packID)
        let deletedAt = ContinuousClock.now
        #expect(try harness.performAndWait { try $0.removePack(packID) })
        try harness.onLoop { harness.scheduler.packRemoved(packID) }
        #expect(Self.becomesIdle(harness) && ContinuousClock.now - deletedAt < .seconds(1))
        harness.close()
        #expect(try StoreReader(path: database.path).pack(packID) == nil)
    }

    /// Waits until the revalidation is `active` and tile transfers (after the few other
    /// resources) are under way.
    static func waitForTileTransfers(_ upstream: RevisedUpstream, after count: Int, _ harness: JobsHarness,
                                     _ packID: Int64) throws {
        try #require(harness.waitForState(packID, ["active"]).contains("active"))
        try #require(eventually { upstream.requests.dropFirst(count).contains { $0.target.hasPrefix("/tiles/") } })
    }

    /// Whether, within a second, no pack holds a slot and no transfer runs or waits.
    static func becomesIdle(_ harness: JobsHarness) -> Bool {
        eventually(within: 1) {
            (try? harness.onLoop { harness.scheduler.activePackIDs.isEmpty && harness.fetcher.runningCount == 0
                && harness.fetcher.waitingCount == 0 }) ?? false
        }
    }

    @Test func checkUpdateIsFalseWhenNothingChangedTrueAfterAStyleRevisionAndFailsOnAnUpstreamError() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        defer { upstream.stop(); database.remove() }
        let packID = try Self.downloadedPack(upstream, database)
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let checker = try harness.onLoop {
            PackUpdateChecker(loop: harness.thread.loop, fetcher: harness.fetcher, store: harness.store)
        }
        func check() throws -> PackUpdateChecker.Outcome {
            let box = Box<PackUpdateChecker.Outcome>()
            try harness.onLoop { checker.check(packID) { box.set($0) } }
            return try #require(box.wait(deadline: .seconds(60)))
        }

        let before = upstream.requests.count
        #expect(try check() == .checked(updateAvailable: false))
        let probes = upstream.requests.dropFirst(before)
        // The style, the TileJSON, one sprite JSON and one glyph range: never a tile.
        #expect(Set(probes.map(\.target)).isSuperset(of: ["/style.json", "/tiles.json", "/sprite.json"]))
        #expect(probes.count == 4 && probes.contains { $0.target.hasPrefix("/fonts/") })
        #expect(probes.allSatisfy { $0.headers["if-none-match"] != nil })

        upstream.change(tiles: ["/tiles/0/0/0.pbf"])
        #expect(try check() == .checked(updateAvailable: false), "tiles are not probed")

        upstream.reviseStyle()
        #expect(try check() == .checked(updateAvailable: true))

        upstream.fail("/tiles.json", status: 503)
        guard case .upstreamFailed(let url, let status, let detail) = try check() else {
            Issue.record("a 503 must fail the check")
            return
        }
        #expect(url.hasSuffix("/tiles.json") && status == 503 && detail.contains("503"))
    }

    @Test func checkUpdateOfAPackThatStoredNothingHasNothingToCompare() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let packID = try harness.performAndWait {
            try $0.createPack(PackRecord(name: "empty", state: .inactive, definition: #"{"style_url": "http://127.0.0.1:9/s.json", "bounds": [0, 0, 1, 1], "min_zoom": 0, "max_zoom": 1, "pixel_ratio": 1}"#), now: 0)
        }
        let checker = try harness.onLoop {
            PackUpdateChecker(loop: harness.thread.loop, fetcher: harness.fetcher, store: harness.store)
        }
        let box = Box<PackUpdateChecker.Outcome>()
        try harness.onLoop { checker.check(packID) { box.set($0) } }
        #expect(box.wait(deadline: .seconds(60)) == .nothingToCompare)
    }
}

/// Counts published by `onInvalidation`, from the loop thread.
final class InvalidationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [PackInvalidation] = []

    func append(_ value: PackInvalidation) { lock.withLock { counts.append(value) } }
    var last: PackInvalidation? { lock.withLock { counts.last } }
}

/// A downloaded pack whose revalidation is `active` with tile requests under way, the upstream
/// holding every tile answer back 3 s: the moment to suspend or delete it.
final class RevalidationUnderWay {
    let upstream: RevisedUpstream
    let database: TemporaryDatabase
    let harness: JobsHarness
    let packID: Int64

    init() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        var harness: JobsHarness?
        do {
            let packID = try PackRevalidationTests.downloadedPack(upstream, database)
            upstream.delayTiles(.seconds(3))
            let requestsBefore = upstream.requests.count
            let started = try JobsHarness(path: database.path)
            harness = started
            try PackRevalidationTests.invalidate(started, packID)
            try PackRevalidationTests.waitForTileTransfers(upstream, after: requestsBefore, started, packID)
            (self.upstream, self.database, self.harness, self.packID) = (upstream, database, started, packID)
        } catch {
            harness?.close()
            upstream.stop()
            database.remove()
            throw error
        }
    }

    func close() {
        harness.close()
        upstream.stop()
        database.remove()
    }
}

/// Every path of a revalidation resolves without the watchdog: a transfer cancelled by someone
/// else (not by the revalidation's own stop) is retried, not dropped. (It was dropped, and the
/// pack stayed `active` with nothing under way, for good: a revalidation had no watchdog.)
@Suite struct RevalidationCancelTests {
    @Test func aTransferCancelledFromOutsideIsRetriedAndTheRevalidationEnds() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        defer { upstream.stop(); database.remove() }
        let packID = try PackRevalidationTests.downloadedPack(upstream, database)
        // Slow tiles keep transfers in flight long enough to cancel them; a watchdog far away
        // proves the end comes from the revalidation itself.
        upstream.delayTiles(.milliseconds(300))
        var settings = JobsHarness.fastRetries
        settings.watchdogInterval = .seconds(600)
        let harness = try JobsHarness(path: database.path, settings: settings)
        defer { harness.close() }
        try PackRevalidationTests.invalidate(harness, packID)
        let owner = UInt64(bitPattern: packID)
        #expect(eventually { ((try? harness.onLoop { harness.fetcher.transferCount(owner: owner) }) ?? 0) > 0 },
                "tile transfers were under way")
        let cancelled = try harness.onLoop { () -> Int in
            let running = harness.fetcher.transferCount(owner: owner)
            harness.fetcher.cancelAll(owner: owner)
            return running
        }
        #expect(cancelled > 0)
        upstream.delayTiles(nil)
        let states = harness.waitForState(packID, ["complete", "failed"], deadline: .seconds(60))
        #expect(states.last == "complete", "\(harness.publishedError(packID) ?? "the revalidation never ended")")
        #expect(try harness.onLoop { harness.scheduler.activePackIDs }.isEmpty)
    }
}
