import Fetch
import Foundation
import Jobs
import PackdTestSupport
import Plan
import Store
import Testing

/// A big pack against an upstream that misbehaves at random on purpose: 500s, resets, truncated
/// bodies, 429 with `Retry-After`, slow drips. The pack must complete with every stored body
/// byte-identical to what the upstream serves, and the host pauses must be honoured.
@Suite struct ChaosDownloadTests {
    static let soak = ProcessInfo.processInfo.environment["PACKD_SOAK"] == "1"

    static func region(_ upstream: MapUpstream, halfWidth: Double, maxZoom: Int) -> [String: Any] {
        ["style_url": upstream.base + "/style.json", "bounds": [-halfWidth, -halfWidth, halfWidth, halfWidth],
         "min_zoom": 0, "max_zoom": maxZoom]
    }

    static func planned(_ upstream: MapUpstream, _ region: [String: Any]) throws -> [PlannedResource] {
        var builder = PlanBuilder(region: try RegionDefinition(json: region))
        try builder.addStyle(Data(upstream.style.utf8))
        try builder.addTileJSON(Data(upstream.tileJSON.utf8), url: upstream.base + "/tiles.json")
        return Array(builder.plan)
    }

    /// About 20,000 tiles (z0–10 over 42.4° × 42.4°); with PACKD_SOAK=1 about 80,000 (z0–11).
    @Test func chaoticUpstreamStillYieldsAnExactPack() throws {
        var chaos = MapUpstream.Chaos()
        if let seed = ProcessInfo.processInfo.environment["PACKD_CHAOS_SEED"].flatMap(UInt64.init) { chaos.seed = seed }
        print("chaos seed \(chaos.seed) (replay with PACKD_CHAOS_SEED=\(chaos.seed))")
        let upstream = try MapUpstream(faults: .init(chaos: chaos))
        defer { upstream.stop() }
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let settings = DownloadSettings(maxInFlight: 32, maxAttempts: 12, initialBackoff: .milliseconds(5),
                                        maxBackoff: .milliseconds(200), watchdogInterval: .milliseconds(200))
        let harness = try JobsHarness(path: database.path, settings: settings)
        defer { harness.close() }
        let region = Self.region(upstream, halfWidth: 21.2, maxZoom: Self.soak ? 11 : 10)
        let planned = try Self.planned(upstream, region)
        let tiles = planned.filter { $0.kind == .tile }.count
        #expect(tiles >= 20_000)

        let started = ContinuousClock.now
        let packID = try harness.createQueuedPack(region: region)
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        let states = harness.waitForState(packID, ["complete", "failed"], deadline: .seconds(600))
        let elapsed = ContinuousClock.now - started
        harness.close()
        #expect(states == ["active", "complete"], "\(harness.publishedError(packID) ?? "no error")")

        let counts = upstream.counts
        let tileRequests = upstream.requests.filter { $0.target.hasPrefix("/tiles/") }
        print("""
            chaos: \(tiles) tiles in \(elapsed): \(tileRequests.count) tile requests, \(counts.serverErrors) × 500, \
            \(counts.resets) resets, \(counts.truncations) truncated, \(counts.tooManyRequests) × 429 \
            (\(counts.pauses.count) with Retry-After: 1), \(counts.drips) drips
            """)
        // Every kind of fault happened (a run without them would prove nothing).
        #expect(counts.serverErrors > 0 && counts.resets > 0 && counts.truncations > 0 && counts.tooManyRequests > 0
                    && counts.drips > 0 && !counts.pauses.isEmpty)

        // Every planned resource stored exactly once, byte-identical to what the upstream serves.
        let rows = try StoredRows(path: database.path, base: upstream.base)
        #expect(rows.tileRows == tiles && rows.resourceRows == planned.count - tiles)
        var mismatches: [String] = []
        for resource in planned {
            let path = String(resource.url.dropFirst(upstream.base.count))
            guard let stored = rows.bodies[path] else {
                mismatches.append("\(path) missing")
                continue
            }
            if stored != upstream.body(for: path) { mismatches.append("\(path) differs") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) wrong: \(mismatches.prefix(5))")

        let reader = try StoreReader(path: database.path)
        let progress = try #require(try reader.progress(packID))
        #expect(progress.completedResources == Int64(planned.count) && progress.completedTiles == Int64(tiles))
        #expect(progress.failedResources == 0)
        #expect(try reader.recountProgress(packID) == progress.completed)

        // Retry-After: 1 paused the host: in the second after each such 429 (from 300 ms on, once
        // the client has surely read it) only transfers admitted before it can arrive — far fewer
        // than the hundreds per second the upstream otherwise sees.
        let arrivals = upstream.requests.map(\.receivedAt)
        for pause in counts.pauses {
            let during = arrivals.filter { $0 > pause + .milliseconds(300) && $0 < pause + .milliseconds(950) }.count
            #expect(during <= settings.maxInFlight, "\(during) requests arrived while the host was paused")
        }
    }
}
