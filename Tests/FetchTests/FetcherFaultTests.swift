import Fetch
import PackdTestSupport
import Foundation
import Testing

@Suite struct FetcherFaultTests {
    @Test func truncatedBodyAndResetAreTransientErrors() throws {
        let upstream = try TestUpstream { request in
            switch request.target {
            case "/truncated": .truncate(declared: 10_000, body: testBody(seed: 1, size: 4000))
            case "/reset": .reset
            default: .respond(status: 200, body: [42])
            }
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let results = try harness.fetchAll([FetchRequest(url: upstream.url("/truncated")), FetchRequest(url: upstream.url("/reset")),
                                            FetchRequest(url: upstream.url("/ok"))])
        #expect(results[0].error == .truncatedBody)
        #expect(results[1].error == .connectionReset)
        #expect(results[2].response?.body == [42])
        #expect(results[0].error?.isTransient == true && results[1].error?.isTransient == true)
    }

    @Test func neverAnsweringUpstreamTimesOut() throws {
        let upstream = try TestUpstream { _ in .hang }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let total = FetchRequest.Timeouts(totalMilliseconds: 300)
        let lowSpeed = FetchRequest.Timeouts(lowSpeedBytesPerSecond: 1, lowSpeedSeconds: 1)
        let start = ContinuousClock.now
        let results = try harness.fetchAll([FetchRequest(url: upstream.url("/a"), timeouts: total),
                                            FetchRequest(url: upstream.url("/b"), timeouts: lowSpeed)])
        #expect(results.map(\.error) == [.timedOut, .timedOut])
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        #expect(upstream.requests.count == 2)
    }

    @Test func slowDripBelowTheLowSpeedLimitTimesOut() throws {
        let upstream = try TestUpstream { _ in .drip(body: testBody(seed: 3, size: 200), chunk: 1, interval: .milliseconds(200)) }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let result = try harness.fetch(FetchRequest(url: upstream.url("/slow"),
                                                    timeouts: .init(lowSpeedBytesPerSecond: 100, lowSpeedSeconds: 1)))
        #expect(result.error == .timedOut)
    }

    @Test func bodiesAboveTheLimitAreRefused() throws {
        let big = testBody(seed: 9, size: 50_000)
        let upstream = try TestUpstream { request in
            request.target == "/declared"
                ? .respond(status: 200, body: big)
                // No Content-Length up front: the limit must trip while the body streams.
                : .drip(body: big, chunk: 16_384, interval: .zero)
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let results = try harness.fetchAll([FetchRequest(url: upstream.url("/declared"), maxBodyBytes: 10_000),
                                            FetchRequest(url: upstream.url("/exact"), maxBodyBytes: 50_000),
                                            FetchRequest(url: upstream.url("/streamed"), maxBodyBytes: 49_999)])
        #expect(results[0].error == .tooLarge(limit: 10_000))
        #expect(results[1].response?.body == big)
        #expect(results[2].error == .tooLarge(limit: 49_999))
    }

    @Test func cancelStopsWaitingAndRunningTransfersPromptly() throws {
        let upstream = try TestUpstream { _ in .hang }
        defer { upstream.stop() }
        let harness = try FetchHarness(FetchConfiguration(maxTransfers: 4, maxTransfersPerHost: 2, addressPolicy: .loopbackForTests))
        defer { harness.close() }
        let results = ResultBox(count: 6)
        let ids = try harness.thread.sync {
            (0..<6).map { index in
                harness.fetcher.submit(FetchRequest(url: upstream.url("/\(index)"), owner: index < 4 ? 7 : 8)) { results.set(index, $0) }
            }
        }
        // Two running (the per-host limit), four waiting: wait until the upstream holds both.
        let deadline = ContinuousClock.now + .seconds(30)
        while upstream.requests.count < 2, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
        #expect(upstream.requests.count == 2)
        let start = ContinuousClock.now
        try harness.thread.sync {
            harness.fetcher.cancelAll(owner: 7)
            harness.fetcher.cancel(ids[5])
        }
        let waitOthers = try harness.thread.sync { harness.fetcher.waitingCount + harness.fetcher.runningCount }
        #expect(waitOthers == 1)
        try harness.thread.sync { harness.fetcher.cancel(ids[4]) }
        #expect(results.wait(deadline: .seconds(30)))
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(results.values.allSatisfy { $0.error == .cancelled })
    }
}
