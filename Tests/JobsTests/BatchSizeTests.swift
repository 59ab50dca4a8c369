import Foundation
import Jobs
import PackdTestSupport
import Packs
import Store
import Testing

/// What a download learns during an upstream outage — a failure record per broken resource —
/// rides the writer's open batch: it never commits a batch early. (Each record used to be a
/// writer operation of its own, which committed the open batch first: during an outage batches
/// shrank towards one row.)
@Suite struct BatchSizeTests {
    @Test func anOutageDuringATwentyThousandTilePackKeepsEveryBatchFull() throws {
        // 1 tile in 40 is broken for good: ~500 failure records spread through the download.
        let upstream = try MapUpstream(faults: .init(brokenTileModulus: 40))
        defer { upstream.stop() }
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let settings = DownloadSettings(maxInFlight: 32, maxAttempts: 2, initialBackoff: .milliseconds(1),
                                        maxBackoff: .milliseconds(5), tolerableFailureShare: 0.2)
        // Only the count may end a batch (or the download's final flush): a long delay, longer
        // under a sanitizer (a ThreadSanitizer run on a loaded machine once took 5 s for 236 rows).
        let batch = 256
        let writer = WriterThread.Configuration(maximumBatchCount: batch, maximumBatchDelay: TestTimeScale.scaled(.seconds(5)))
        let harness = try JobsHarness(path: database.path, settings: settings, writer: writer)
        defer { harness.close() }
        let region = ChaosDownloadTests.region(upstream, halfWidth: 21.2, maxZoom: 10)
        let tiles = try ChaosDownloadTests.planned(upstream, region).filter { $0.kind == .tile }.count
        #expect(tiles >= 20_000)
        let packID = try harness.createQueuedPack(region: region)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        let states = harness.waitForState(packID, ["complete", "failed"], deadline: .seconds(300))
        harness.close()
        #expect(states.last == "failed" && harness.publishedError(packID)?.contains("resources_failed") == true,
                "the broken tiles fail the pack at the end: \(harness.publishedError(packID) ?? "")")
        let failures = try #require(try StoreReader(path: database.path).progress(packID)).failedResources
        #expect(failures > 300, "the outage happened (\(failures) failure records)")

        let sizes = harness.committedBatchSizes
        let full = sizes.dropLast().filter { $0 == batch }.count
        print("batches: \(sizes.count), \(full) of \(batch) rows; the last \(sizes.last ?? 0); \(failures) failure records")
        #expect(sizes.count >= 20)
        #expect(sizes.dropLast().allSatisfy { $0 == batch }, "a batch was committed early: \(sizes.filter { $0 != batch })")
    }
}
