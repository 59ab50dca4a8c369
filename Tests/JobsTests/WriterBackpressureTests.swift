import Fetch
import Foundation
import Jobs
import PackdTestSupport
import Store
import Testing

/// A writer slower than the network must stall fetching, not queue bodies without limit.
@Suite struct WriterBackpressureTests {
    @Test func aBlockedWriterStopsFetchingWithinTheUncommittedBoundThenTheDownloadCompletes() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        // 16 KiB: about a dozen writes (each costs its body plus 1 KiB) before fetching pauses.
        let settings = DownloadSettings(maxInFlight: 8, initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(50),
                                        maxUncommittedBytes: 16 << 10)
        let harness = try JobsHarness(path: database.path, settings: settings)
        defer { harness.close() }
        let region = PackDownloadTests.region(upstream, maxZoom: 8)
        let tiles = try PackDownloadTests.planned(upstream, maxZoom: 8).filter { $0.kind == .tile }.count
        #expect(tiles > 500)
        let packID = try harness.createQueuedPack(region: region)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForProgress(packID) { $0.completedTiles >= 1 })

        // Block the writer thread: nothing commits from here on.
        let gate = DispatchSemaphore(value: 0)
        defer { gate.signal() } // never leave the writer blocked (close() waits for it)
        harness.writer.perform({ _ in gate.wait() }, completion: { _ in })
        let blockedAt = upstream.requests.count
        // Wait until transfers have stopped and the request count holds still for a while.
        var stable = 0
        var last = -1
        let deadline = ContinuousClock.now + .seconds(60)
        while stable < 20, ContinuousClock.now < deadline {
            let idle = try harness.onLoop { harness.fetcher.runningCount + harness.fetcher.waitingCount == 0 }
            let count = upstream.requests.count
            stable = idle && count == last ? stable + 1 : 0
            last = count
            Thread.sleep(forTimeInterval: 0.01) // polling interval of a condition, not synchronisation
        }
        #expect(stable >= 20, "transfers never stopped while the writer was blocked")
        let fetchedWhileBlocked = upstream.requests.count - blockedAt
        // The bound (≈12 writes) plus the 8 transfers already under way, with room for encodes.
        #expect(fetchedWhileBlocked <= 40, "\(fetchedWhileBlocked) tiles fetched while nothing could commit")
        #expect(upstream.requests.filter { $0.target.hasPrefix("/tiles/") }.count < tiles)

        gate.signal()
        #expect(harness.waitForState(packID, ["complete", "failed"]).last == "complete")
        let progress = try #require(try StoreReader(path: database.path).progress(packID))
        #expect(progress.completedTiles == Int64(tiles))
    }
}
