import Foundation
import Jobs
import Loop
import PackdTestSupport
import Packs
import Store
import Testing

/// Scheduled refresh on one node: a due pack is revalidated through the scheduler like an
/// `invalidate`, its next due time drawn anew; a pack that is not complete skips the round.
@Suite struct PackRefresherTests {
    /// A clock a test moves.
    final class TestClock: @unchecked Sendable {
        private let lock = NSLock()
        private var seconds: Int64
        init(_ seconds: Int64) { self.seconds = seconds }
        var now: Int64 { lock.withLock { seconds } }
        func advance(to value: Int64) { lock.withLock { seconds = value } }
        var wallClock: WallClock { WallClock { [self] in now } }
    }

    @Test func aDueRefreshRevalidatesThePackAndTheNextOneIsDrawnAnew() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        defer { upstream.stop(); database.remove() }
        let packID = try PackRevalidationTests.downloadedPack(upstream, database)
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let clock = TestClock(2_000_000_000)
        let idle = try harness.performAndWait { database in
            try database.createPack(PackRecord(name: "never started", state: .inactive, definition: "{}"), now: 1)
        }
        try harness.performAndWait { database in
            try database.setRefresh(packID, every: "PT1H", next: 2_000_000_000 - 5, now: 1)
            try database.setRefresh(idle, every: "PT2H", next: 2_000_000_000 - 5, now: 1)
        }
        nonisolated(unsafe) var refresher: PackRefresher!
        try harness.onLoop {
            refresher = PackRefresher(loop: harness.thread.loop, store: harness.store, clock: clock.wallClock,
                                      pollInterval: .milliseconds(50), listener: nil, scheduling: harness.scheduler)
            refresher.start()
        }
        defer { try? harness.onLoop { refresher.shutdown() } }
        #expect(harness.waitForState(packID, "complete", count: 1), "\(harness.publishedError(packID) ?? "")")
        let reader = try StoreReader(path: database.path)
        let refreshed = try #require(try reader.pack(packID))
        #expect(refreshed.invalidation?.completedAt != nil && refreshed.invalidation?.updated == 0)
        #expect((2_000_003_600...2_000_003_960).contains(refreshed.nextRefreshAt ?? 0), "the next one an hour on, jittered")
        #expect(refreshed.version == 1, "nothing changed upstream: no version")
        let skipped = try #require(try reader.pack(idle))
        #expect(skipped.state == .inactive && skipped.invalidation == nil, "a pack that is not complete skips the round")
        #expect((2_000_007_200...2_000_007_920).contains(skipped.nextRefreshAt ?? 0))
        #expect(try harness.onLoop { refresher.claimed } == [packID])

        // An hour later the upstream has changed: the next refresh makes version 2.
        let tiles = try PackRevalidationTests.storedTilePaths(database, packID).map(\.path)
        upstream.change(tiles: tiles.prefix(4))
        clock.advance(to: refreshed.nextRefreshAt ?? 0)
        #expect(harness.waitForState(packID, "complete", count: 2), "\(harness.publishedError(packID) ?? "")")
        #expect(try reader.pack(packID)?.version == 2)
        #expect(try reader.version(2, of: packID)?.changedResources == 4)
        #expect(try harness.onLoop { refresher.claimed } == [packID, packID])
    }
}
