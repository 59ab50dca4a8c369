import PackdTestSupport
import Foundation
import Packs
import Store
import Testing
@testable import API
@testable import Events

/// `bytes_per_second` and `eta_seconds`: rolling rates of committed progress, shown only while a
/// pack is active.
@Suite struct ProgressRatesTests {
    private func progress(bytes: Int64, resources: Int64) -> StoredProgress {
        StoredProgress(completedResources: resources, completedBytes: bytes)
    }

    @Test func rateIsTheCommittedDeltaOverTheWindowAndDecaysWhenCommitsStop() throws {
        var rates = ProgressRates(window: 10, minimumSpan: 0.25)
        rates.record(packID: 1, progress: progress(bytes: 0, resources: 0), now: 100)
        #expect(rates.rate(packID: 1, now: 100) == nil, "one sample is no rate")
        rates.record(packID: 1, progress: progress(bytes: 4000, resources: 40), now: 102)
        let rate = try #require(rates.rate(packID: 1, now: 102))
        #expect(rate.wholeBytesPerSecond == 2000)
        #expect(rate.resourcesPerSecond == 20)
        // 100 expected, 40 done: 60 left at 20 per second.
        #expect(rate.etaSeconds(completedResources: 40, expected: ExpectedCounts(resources: 100, tiles: 0, precise: true)) == 3)
        #expect(rate.etaSeconds(completedResources: 40, expected: ExpectedCounts(resources: 100, tiles: 0, precise: false)) == nil)
        #expect(rate.etaSeconds(completedResources: 100, expected: ExpectedCounts(resources: 100, tiles: 0, precise: true)) == 0)
        // Nothing committed for 8 more seconds: the same bytes over 10 s.
        #expect(rates.rate(packID: 1, now: 110)?.wholeBytesPerSecond == 400)
        // A whole window with no commit: the rate is zero and no ETA can be given.
        let stalled = try #require(rates.rate(packID: 1, now: 130))
        #expect(stalled.wholeBytesPerSecond == 0)
        #expect(stalled.etaSeconds(completedResources: 40, expected: ExpectedCounts(resources: 100, tiles: 0, precise: true)) == nil)
        rates.forget(packID: 1)
        #expect(rates.rate(packID: 1, now: 130) == nil)
    }

    @Test func onlyTheLastWindowCountsAndARecountRestartsTheHistory() throws {
        var rates = ProgressRates(window: 10, minimumSpan: 0.25)
        // 1000 B/s for 20 s, then 100 B/s for 10 s: the rate reads the recent 100 B/s.
        for second in 0...20 { rates.record(packID: 7, progress: progress(bytes: Int64(second) * 1000, resources: Int64(second)), now: Double(second)) }
        for second in 21...30 { rates.record(packID: 7, progress: progress(bytes: 20_000 + Int64(second - 20) * 100, resources: 20), now: Double(second)) }
        #expect(rates.rate(packID: 7, now: 30)?.wholeBytesPerSecond == 100)
        // Counts going down (a resumed pack recounted) are a new history, never a negative rate.
        rates.record(packID: 7, progress: progress(bytes: 10, resources: 1), now: 31)
        #expect(rates.rate(packID: 7, now: 31) == nil)
        rates.record(packID: 7, progress: progress(bytes: 510, resources: 2), now: 32)
        #expect(rates.rate(packID: 7, now: 32)?.wholeBytesPerSecond == 500)
        #expect(rates.trackedPacks == 1)
    }

    /// Through the API: committed progress (as the scheduler hands it) gives the pack document and
    /// the progress event a rate while the pack is active, and null once it is not.
    @Test func packDocumentAndProgressEventsCarryTheRateWhileActive() throws {
        let server = try RoutesFixture()
        defer {
            server.stop()
            server.removeFiles()
        }
        let id = try #require(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#).json["id"] as? Int)
        let packID = Int64(id)
        let done = DispatchSemaphore(value: 0)
        server.writer.perform({ database in
            try database.setPackState(packID, state: .active, error: nil, now: 1)
            try database.setExpected(packID, resources: 105, tiles: 100, precise: true, now: 1)
        }, completion: { _ in done.signal() })
        done.wait()
        nonisolated(unsafe) let api = server.api!
        let clock = SettableSeconds()
        // The scheduler publishes the pack's start before any of its progress.
        server.server.onLoop {
            api.events.seconds = { clock.now }
            api.events.publishState(packID, state: .active, previous: .inactive)
        }
        let stream = try StreamClient(port: server.port)
        try stream.get("/v1/packs/\(id)/events")
        #expect(try stream.nextEvent()?.type == "progress")

        server.server.onLoop { api.events.progressCommitted(packID, StoredProgress(completedResources: 5, completedBytes: 1000), expected: ExpectedCounts(resources: 105, tiles: 0, precise: true)) }
        clock.now = 4
        server.server.onLoop { api.events.progressCommitted(packID, StoredProgress(completedResources: 45, completedBytes: 9000), expected: ExpectedCounts(resources: 105, tiles: 0, precise: true)) }
        let events = try stream.events { $0.data.contains(#""completed_resources":45"#) }
        let lastEvent = try #require(events.last)
        let last = try #require(try JSONSerialization.jsonObject(with: Data(lastEvent.data.utf8)) as? [String: Any])
        let eventProgress = try #require(last["progress"] as? [String: Any])
        #expect(eventProgress["bytes_per_second"] as? Int == 2000)
        // 60 resources left at 10 per second.
        #expect(eventProgress["eta_seconds"] as? Int == 6)

        // The poll agrees (its completed counts come from the database, still 0 here: 105 left).
        let polled = try #require(try server.send("GET", "/v1/packs/\(id)").json["progress"] as? [String: Any])
        #expect(polled["bytes_per_second"] as? Int == 2000)
        #expect(polled["eta_seconds"] as? Int == 11)
        let listed = try #require((try server.send("GET", "/v1/packs").json["packs"] as? [[String: Any]])?.first?["progress"] as? [String: Any])
        #expect(listed["bytes_per_second"] as? Int == 2000)

        #expect(try server.send("POST", "/v1/packs/\(id)/suspend").status == 200)
        let suspended = try #require(try server.send("GET", "/v1/packs/\(id)").json["progress"] as? [String: Any])
        #expect(suspended["bytes_per_second"] is NSNull)
        #expect(suspended["eta_seconds"] is NSNull)
    }
}

/// Seconds set by the test, read on the loop thread.
final class SettableSeconds: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Double = 0
    var now: Double {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
