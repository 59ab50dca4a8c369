import Foundation
import Jobs
import PackdTestSupport
import Packs
import Store
import Testing

/// `limits.max_bytes_per_second`: a rolling-average cap on what one pack receives.
@Suite struct BandwidthCapTests {
    static let bodyBytes = 2000

    /// A tile template upstream answering every tile with the same body size, so the bytes
    /// received up to any request are its count times `bodyBytes`.
    static func tileUpstream() throws -> TestUpstream {
        try TestUpstream { _ in
            .respond(status: 200, headers: [("Cache-Control", "max-age=3600")],
                     body: [UInt8](repeating: UInt8(ascii: "t"), count: bodyBytes))
        }
    }

    static func region(_ upstream: TestUpstream) -> [String: Any] {
        ["tiles": [upstream.url("/t/{z}/{x}/{y}.png")], "bounds": [-60.0, -60.0, 60.0, 60.0], "min_zoom": 0, "max_zoom": 5]
    }

    /// The pack completes, and the average rate over the run — bytes received before the last
    /// request over the time from the first request to the last — stays within 25 % of the cap.
    /// The run is sized to last about five seconds at the cap, so a download that ignored it
    /// (milliseconds on loopback) would exceed it many times over.
    @Test func cappedPackHoldsItsAverageAndCompletes() throws {
        let cap = 80_000
        let (requests, progress) = try Self.download(limits: PackLimits(maxBytesPerSecond: Int64(cap)))
        let total = requests.count * Self.bodyBytes
        #expect(total > cap * 4, "the run must be long against the half-second burst")
        let first = try #require(requests.first?.receivedAt)
        let last = try #require(requests.last?.receivedAt)
        let elapsed = last - first
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let average = Double(total - Self.bodyBytes) / seconds
        #expect(average <= Double(cap) * 1.25, "average \(Int(average)) B/s against a cap of \(cap)")
        // Held, not starved: the cap is the limit, not a crawl far below it.
        #expect(average >= Double(cap) * 0.25, "average \(Int(average)) B/s against a cap of \(cap)")
        #expect(progress?.completedTiles == Int64(requests.count))
    }

    /// Downloads the tile region with `limits` to its end; the requests the upstream saw, in
    /// arrival order, and the pack's stored progress. Expects `complete`.
    static func download(limits: PackLimits) throws -> ([TestUpstream.Request], StoredProgress?) {
        let upstream = try tileUpstream()
        defer { upstream.stop() }
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let packID = try harness.createQueuedPack(region: region(upstream), limits: limits)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["complete", "failed"]).last == "complete",
                "\(harness.publishedError(packID) ?? "")")
        harness.close()
        return (upstream.requests.sorted { $0.receivedAt < $1.receivedAt },
                try StoreReader(path: database.path).progress(packID))
    }

    /// Within any one-second window the bytes received stay within the cap plus its burst (half a
    /// second) and the transfers a start lets through: bursts allowed, average held throughout,
    /// not only over the whole run.
    @Test func everySecondOfACappedRunStaysNearTheCap() throws {
        let cap = 60_000
        let times = try Self.download(limits: PackLimits(maxBytesPerSecond: Int64(cap))).0.map(\.receivedAt)
        var windowStart = 0
        var busiest = 0
        for end in times.indices {
            while times[end] - times[windowStart] > .seconds(1) { windowStart += 1 }
            busiest = max(busiest, (end - windowStart + 1) * Self.bodyBytes)
        }
        // cap + burst + the in-flight transfers (8) started on the balance.
        #expect(busiest <= cap + cap / 2 + 8 * Self.bodyBytes, "busiest second: \(busiest) B")
    }
}
