import Fetch
import Foundation
import Jobs
import PackdTestSupport
import Store
import Testing

/// "A pack never sits `active` with nothing in flight and nothing scheduled": the paths where a
/// resource could be dropped without being resolved, and the watchdog that catches any other.
@Suite struct StallTests {
    static let watched = DownloadSettings(maxInFlight: 8, initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(50),
                                          watchdogInterval: .milliseconds(100))

    /// A watched download slowed by a tile delay, returned once 40 tiles are stored.
    static func runUntilMidway() throws -> DownloadRun {
        let run = try DownloadRun(faults: .init(tileDelay: .milliseconds(5)), settings: watched)
        let packID = run.packID
        guard run.harness.waitForProgress(packID, { $0.completedTiles >= 40 }) else {
            run.close()
            throw HarnessTimeout()
        }
        return run
    }

    /// A transfer cancelled by someone other than the download (the fetcher's `cancelAll`) used
    /// to be dropped as "stopped": its resource never resolved and the pack stayed `active` for
    /// ever. It is retried now, and the pack completes.
    @Test func transfersCancelledFromOutsideAreRetried() throws {
        let run = try Self.runUntilMidway()
        defer { run.close() }
        let (harness, packID) = (run.harness, run.packID)
        let cancelled = try harness.onLoop { () -> Int in
            let count = harness.fetcher.transferCount(owner: UInt64(packID))
            harness.fetcher.cancelAll(owner: UInt64(packID))
            return count
        }
        #expect(cancelled > 0, "nothing was in flight to cancel")
        #expect(run.finish(deadline: .seconds(60)) == ["active", "complete"], "\(harness.publishedError(packID) ?? "")")
        let planned = try PackDownloadTests.planned(run.upstream)
        let progress = try #require(try StoreReader(path: run.database.path).progress(packID))
        #expect(progress.completedResources == Int64(planned.count))
    }

    /// The fetcher shut down under a running download (a wiring mistake: the scheduler must stop
    /// first): every transfer ends as "shutdown" and nothing will ever resolve them. The watchdog
    /// sees resources under way that nothing accounts for and fails the pack visibly.
    @Test func watchdogFailsADownloadWhoseTransfersVanished() throws {
        let run = try Self.runUntilMidway()
        defer { run.close() }
        let (harness, packID) = (run.harness, run.packID)
        try harness.onLoop { harness.fetcher.shutdown() }
        #expect(run.finish(deadline: .seconds(30)) == ["active", "failed"])
        let error = try #require(harness.publishedError(packID))
        #expect(error.contains(#""code":"internal_error""#) && error.contains("stalled"), "\(error)")
        #expect(try harness.onLoop { harness.scheduler.activePackIDs }.isEmpty)
        let stored = try #require(try StoreReader(path: run.database.path).pack(packID))
        #expect(stored.state == .failed)
    }

    /// The scheduler cannot read a queued pack's record (here a column its query needs is gone):
    /// it used to take that for "the pack is gone" and drop it, leaving the pack `queued` with
    /// nothing running. It fails the pack visibly instead (`storage_error`; resume retries).
    @Test func unreadablePackRecordFailsThePackInsteadOfDroppingIt() throws {
        let run = try UnreadablePackRun()
        defer { run.close() }
        let (harness, packID, upstream) = (run.harness, run.packID, run.upstream)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["failed", "active"], deadline: .seconds(30)) == ["failed"])
        let error = try #require(harness.publishedError(packID))
        #expect(error.contains(#""code":"storage_error""#) && error.contains("cannot read the pack"), "\(error)")
        #expect(try harness.onLoop { harness.scheduler.activePackIDs }.isEmpty)
        #expect(upstream.requests.isEmpty)
    }

    /// Restart with the packs to continue unreadable for a moment (a column their listing needs
    /// is renamed away, and back once the failure is reported): the listing used to swallow the
    /// error and continue nothing, leaving the pack `queued` for good. It is retried now.
    @Test func restartRetriesListingThePacksToContinue() throws {
        let run = try UnreadablePackRun()
        defer { run.close() }
        let (harness, packID) = (run.harness, run.packID)
        let failures = Box<[Int]>()
        let attempts = NSLock()
        var seen: [Int] = []
        try harness.onLoop {
            harness.scheduler.onResumeListingFailed = { _, attempt in
                attempts.withLock { seen.append(attempt) }
                if attempt == 2 { failures.set(attempts.withLock { seen }) }
            }
            harness.scheduler.start()
        }
        #expect(failures.wait(deadline: .seconds(30)) == [1, 2])
        try run.restoreColumn()
        #expect(harness.waitForState(packID, ["complete", "failed"], deadline: .seconds(60)) == ["active", "complete"])
    }
}

/// A queued pack (depth 2) whose record its readers cannot read: another connection renamed a
/// column of `packd_packs` away, until `restoreColumn`.
final class UnreadablePackRun {
    let database: TemporaryDatabase
    let upstream: MapUpstream
    let harness: JobsHarness
    let packID: Int64
    private let other: Database

    init() throws {
        database = try TemporaryDatabase()
        upstream = try MapUpstream()
        harness = try JobsHarness(path: database.path, settings: StallTests.watched)
        packID = try harness.createQueuedPack(region: PackDownloadTests.region(upstream, maxZoom: 2))
        other = try Database(path: database.path, mode: .readWrite)
        try other.execute("ALTER TABLE packd_packs RENAME COLUMN context TO context_gone")
    }

    func restoreColumn() throws {
        try other.execute("ALTER TABLE packd_packs RENAME COLUMN context_gone TO context")
    }

    func close() {
        harness.close()
        upstream.stop()
        database.remove()
    }
}
