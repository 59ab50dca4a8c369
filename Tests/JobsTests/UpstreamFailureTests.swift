import Fetch
import Foundation
import Jobs
import PackdTestSupport
import Store
import Testing

/// Upstreams that refuse, never answer, rate-limit with a date, or sit at an address the policy
/// forbids: each pack ends `failed` with a precise code (or completes), quickly, never stuck `active`.
@Suite struct UpstreamFailureTests {
    /// Short limits so a silent upstream costs a fraction of a second per attempt.
    static let impatient = DownloadSettings(
        maxInFlight: 8, maxAttempts: 3, initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(50),
        timeouts: FetchRequest.Timeouts(connectMilliseconds: 500, lowSpeedBytesPerSecond: 1, lowSpeedSeconds: 1,
                                        totalMilliseconds: 400),
        watchdogInterval: .milliseconds(100))

    static func code(_ run: DownloadRun) -> String? { field("code", run) }

    static func field(_ name: String, _ run: DownloadRun) -> String? {
        guard let json = run.harness.publishedError(run.packID),
              let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return nil }
        return object[name] as? String
    }

    @Test func forbiddenStyleFailsWithinSeconds() throws {
        let started = ContinuousClock.now
        let run = try DownloadRun(faults: .init(styleStatus: 403))
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(30)) == ["active", "failed"])
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(Self.code(run) == "upstream_unauthorized")
        #expect(run.upstream.requests.map(\.target) == ["/style.json"], "a 403 is not retried")
    }

    @Test func forbiddenTilesFailThePackWithNoMoreRequestsThanTheWindow() throws {
        let run = try DownloadRun(faults: .init(tileStatus: 403))
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(30)) == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(Self.code(run) == "upstream_unauthorized" && error.contains(#""status":403"#))
        let tileRequests = run.upstream.requests.filter { $0.target.hasPrefix("/tiles/") }.count
        #expect(tileRequests >= 1 && tileRequests <= JobsHarness.fastRetries.maxInFlight)
        let stored = try #require(try StoreReader(path: run.database.path).pack(run.packID))
        #expect(stored.state == .failed)
    }

    @Test func styleThatNeverAnswersTimesOutAndFails() throws {
        let started = ContinuousClock.now
        let run = try DownloadRun(faults: .init(everything: .hang), settings: Self.impatient)
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(60)) == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(Self.code(run) == "style_unavailable" && error.contains("timeout"), "\(error)")
        // Every attempt was made and timed out: three requests, roughly three total timeouts.
        #expect(run.upstream.requests.map(\.target) == Array(repeating: "/style.json", count: 3))
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    /// A style that trickles in far below the low-speed limit is abandoned by that limit (the
    /// total limit is a minute here), retried, and the pack fails with the timeout named.
    @Test func styleThatTricklesIsCutByTheLowSpeedLimit() throws {
        var settings = Self.impatient
        settings.timeouts = FetchRequest.Timeouts(connectMilliseconds: 500, lowSpeedBytesPerSecond: 1000,
                                                  lowSpeedSeconds: 1, totalMilliseconds: 60_000)
        let started = ContinuousClock.now
        let run = try DownloadRun(faults: .init(everything: .drip(body: Array(repeating: 0x20, count: 4096), chunk: 8,
                                                                  interval: .milliseconds(100))),
                                  settings: settings)
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(60)) == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(Self.code(run) == "style_unavailable" && error.contains("timeout"), "\(error)")
        #expect(run.upstream.requests.count == 3)
        #expect(ContinuousClock.now - started < .seconds(30), "the low-speed limit did not cut the transfers")
    }

    @Test func tilesThatNeverAnswerEndInTooManyFailures() throws {
        let run = try DownloadRun(faults: .init(tileReply: .hang), settings: Self.impatient)
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(90)) == ["active", "failed"])
        #expect(Self.code(run) == "too_many_failures", "\(run.harness.publishedError(run.packID) ?? "")")
        #expect(try run.harness.onLoop { run.harness.scheduler.activePackIDs }.isEmpty)
        let progress = try #require(try StoreReader(path: run.database.path).progress(run.packID))
        #expect(progress.failedResources > 16 && progress.completedTiles == 0)
    }

    /// A style pointing at 127.0.0.1 with a fetcher that allows no private address: refused at
    /// connect time (nothing is sent), the pack fails at once naming the address policy.
    @Test func privateAddressWithoutAllowRuleIsRefused() throws {
        let run = try DownloadRun(settings: Self.impatient, fetch: FetchConfiguration(addressPolicy: AddressPolicy()))
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(30)) == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(Self.code(run) == "host_not_allowed" && error.contains("allow-upstream-hosts"), "\(error)")
        #expect(Self.field("url", run) == run.upstream.base + "/style.json")
        #expect(run.upstream.requests.isEmpty, "the request left although the address is refused")
    }

    /// Allowed by name (`localhost`), but the tiles redirect to 127.0.0.1, which is not: the
    /// redirect hop is refused at connect time and the pack fails the same way.
    @Test func redirectToPrivateAddressIsRefused() throws {
        let run = try DownloadRun(faults: .init(redirectTilesToAddress: true), settings: Self.impatient,
                                  fetch: FetchConfiguration(addressPolicy: AddressPolicy(allowedHosts: ["localhost"])),
                                  host: "localhost")
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(30)) == ["active", "failed"])
        let error = try #require(run.harness.publishedError(run.packID))
        #expect(Self.code(run) == "host_not_allowed", "\(error)")
        let requests = run.upstream.requests
        #expect(requests.contains { $0.target.hasPrefix("/tiles/") }, "the allowed host was reached")
        #expect(!requests.contains { $0.headers["host"]?.hasPrefix("127.0.0.1") == true },
                "a request reached the refused address")
    }

    /// `Retry-After` as an HTTP-date pauses the host: with one transfer at a time, the retry of
    /// the rate-limited tile comes a second or more later, not after the 5 ms backoff.
    @Test func retryAfterAsHTTPDateIsHonoured() throws {
        let settings = DownloadSettings(maxInFlight: 1, initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(50))
        let run = try DownloadRun(faults: .init(firstTileRetryAfterDate: .seconds(2)), maxZoom: 2, settings: settings)
        defer { run.close() }
        #expect(run.finish(deadline: .seconds(60)).last == "complete", "\(run.harness.publishedError(run.packID) ?? "")")
        let tiles = run.upstream.requests.filter { $0.target.hasPrefix("/tiles/") }
        try #require(tiles.count >= 2)
        // The date has whole seconds: two seconds ahead is between one and two seconds of pause.
        let pause = tiles[1].receivedAt - tiles[0].receivedAt
        #expect(pause >= .milliseconds(900), "retried after \(pause)")
        #expect(tiles[1].target == tiles[0].target, "the rate-limited tile is the one retried")
    }

    /// A few tiles fail every attempt (fewer than the failure budget): everything else is stored,
    /// the pack ends `failed`/`resources_failed` listing exactly those, and a resume (as the API
    /// does it) fetches only those and completes.
    @Test func fewFailedTilesEndFailedAndResumeFetchesOnlyThem() throws {
        let modulus: UInt64 = 101
        let settings = DownloadSettings(maxInFlight: 8, maxAttempts: 2, initialBackoff: .milliseconds(5),
                                        maxBackoff: .milliseconds(50), watchdogInterval: .milliseconds(100))
        let run = try DownloadRun(faults: .init(brokenTileModulus: modulus), settings: settings)
        defer { run.close() }
        let (harness, packID, upstream) = (run.harness, run.packID, run.upstream)
        let planned = try PackDownloadTests.planned(upstream)
        let broken = Set(planned.map { PackDownloadTests.path($0.url, upstream) }.filter {
            MapUpstream.isBroken($0, modulus: modulus) && upstream.body(for: $0) != nil
        })
        try #require(!broken.isEmpty && broken.count < 16)
        #expect(run.finish() == ["active", "failed"])
        #expect(Self.code(run) == "resources_failed", "\(harness.publishedError(packID) ?? "")")
        let reader = try StoreReader(path: run.database.path)
        let failures = try reader.failures(packID: packID)
        #expect(Set(failures.map { PackDownloadTests.path($0.url, upstream) }) == broken)
        #expect(failures.allSatisfy { $0.status == 500 && $0.attempts == 2 })
        let progress = try #require(try reader.progress(packID))
        #expect(progress.failedResources == Int64(broken.count))
        #expect(progress.completedResources == Int64(planned.count - broken.count))

        upstream.update { $0.brokenTileModulus = nil }
        let before = upstream.requests.count
        _ = try harness.performAndWait { database in
            try database.setPackState(packID, state: .queued, error: nil, now: 0)
            try database.clearFailures(packID: packID)
        }
        try harness.onLoop { harness.scheduler.packQueued(packID) }
        #expect(harness.waitForState(packID, ["complete"]).last == "complete")
        let refetched = upstream.requests[before...].map(\.target)
        #expect(Set(refetched.filter { $0.hasPrefix("/tiles/") }) == broken && refetched.count == broken.count + 2,
                "resume fetched \(refetched.count) resources for \(broken.count) missing (+ style and TileJSON)")
        let final = try #require(try reader.progress(packID))
        #expect(final.completedResources == Int64(planned.count) && final.failedResources == 0)
    }

    /// Failures recorded by a run that a restart interrupted do not outlive it: the next run
    /// retries every missing resource, so a pack that then gets them all is `complete` with no
    /// failed resources left in its progress or its failure list.
    @Test func restartForgetsTheInterruptedRunsFailures() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let upstream = try MapUpstream(faults: .init(tileDelay: .milliseconds(5), brokenTileModulus: 101))
        defer { upstream.stop() }
        let settings = DownloadSettings(maxInFlight: 4, maxAttempts: 2, initialBackoff: .milliseconds(5),
                                        maxBackoff: .milliseconds(50))
        let first = try JobsHarness(path: database.path, settings: settings)
        let packID = try first.createQueuedPack(region: PackDownloadTests.region(upstream))
        try first.onLoop { first.scheduler.packQueued(packID) }
        let reader = try StoreReader(path: database.path)
        #expect(eventually { ((try? reader.progress(packID))??.failedResources ?? 0) >= 1 })
        first.close()
        try #require(try reader.pack(packID)?.state == .active, "the pack ended before the restart")

        upstream.update { $0.brokenTileModulus = nil }
        let second = try JobsHarness(path: database.path, settings: settings)
        defer { second.close() }
        try second.onLoop { second.scheduler.start() }
        #expect(second.waitForState(packID, ["complete", "failed"]).last == "complete")
        second.close()
        let progress = try #require(try reader.progress(packID))
        #expect(progress.failedResources == 0)
        #expect(try reader.failures(packID: packID).isEmpty)
        #expect(progress.completedResources == Int64(try PackDownloadTests.planned(upstream).count))
    }

    /// A 503 with `Retry-After` on one pack's tile pauses the host for every pack: in the second
    /// that follows, only a request already in flight for the other pack may reach the upstream.
    @Test func retryAfterPausesTheHostForEveryPack() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let upstream = try MapUpstream(faults: .init(firstTileRetryAfterDate: .seconds(2), firstTileRetryAfterStatus: 503))
        defer { upstream.stop() }
        let settings = DownloadSettings(maxInFlight: 1, initialBackoff: .milliseconds(5), maxBackoff: .milliseconds(50))
        let harness = try JobsHarness(path: database.path, settings: settings, maxActive: 2)
        defer { harness.close() }
        let packs = try (0..<2).map { _ in try harness.createQueuedPack(region: PackDownloadTests.region(upstream, maxZoom: 7)) }
        try harness.onLoop { for packID in packs { harness.scheduler.packQueued(packID) } }
        for packID in packs {
            #expect(harness.waitForState(packID, ["complete", "failed"]).last == "complete")
        }
        let requests = upstream.requests
        let limited = try #require(requests.first { $0.target.hasPrefix("/tiles/") })
        let during = requests.filter {
            $0.receivedAt > limited.receivedAt + .milliseconds(300) && $0.receivedAt < limited.receivedAt + .milliseconds(900)
        }
        #expect(during.count <= 1, "\(during.map(\.target)) reached the upstream while the host was paused")
        // Both packs still had most of their tiles to fetch when the pause began.
        let after = requests.filter { $0.receivedAt > limited.receivedAt + .seconds(1) }.count
        #expect(after * 2 > requests.count, "only \(after) of \(requests.count) requests came after the pause")
    }
}
