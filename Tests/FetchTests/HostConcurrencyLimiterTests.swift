import Fetch
import Testing

/// The limiter on a synthetic clock against simulated servers: every transfer in flight, one
/// round after another, so its decisions are checked exactly (the socket tests check the same
/// behaviour end to end, with real timing).
@Suite struct HostConcurrencyLimiterTests {
    /// Runs `rounds` rounds: each round the host is kept at its limit (a transfer waits), and the
    /// n-th transfer in flight finishes with what `server(inFlight, n)` says. Returns the limit
    /// after each round and the number of overload answers.
    static func simulate(_ limiter: inout HostConcurrencyLimiter, rounds: Int,
                         server: (Int, Int) -> HostConcurrencyLimiter.Signal) -> (limits: [Int], overloads: Int) {
        var now = ContinuousClock.now
        var limits: [Int] = []
        var overloads = 0
        for _ in 0..<rounds {
            let inFlight = limiter.limit
            let epoch = limiter.epoch
            limiter.noteLimited()
            for index in 0..<inFlight {
                let signal = server(inFlight, index)
                if case .overloaded = signal { overloads += 1 }
                now += .milliseconds(1)
                limiter.finished(signal, startedEpoch: epoch, inFlight: inFlight, now: now)
            }
            limits.append(limiter.limit)
        }
        return (limits, overloads)
    }

    @Test func slowStartDoublesWhileLatencyHoldsUpToTheCeiling() {
        var limiter = HostConcurrencyLimiter(maximum: 128)
        #expect(limiter.limit == 8)
        let run = Self.simulate(&limiter, rounds: 6) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(run.limits == [16, 32, 64, 128, 128, 128])
    }

    @Test func aLimitThatHoldsNothingBackDoesNotGrow() {
        var limiter = HostConcurrencyLimiter(maximum: 128)
        for _ in 0..<100 {
            limiter.finished(.answered(latency: .milliseconds(40)), startedEpoch: 0, inFlight: 3, now: .now)
        }
        #expect(limiter.limit == 8)
    }

    @Test func overloadCutsAtOnceAndOnlyOncePerRound() {
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, rounds: 3) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(limiter.limit == 64)
        let epoch = limiter.epoch
        limiter.finished(.overloaded(.rateLimited), startedEpoch: epoch, inFlight: 64, now: .now)
        #expect(limiter.limit == 44)  // 0.7 × 64, rounded down
        #expect(limiter.lastCut?.reason == .rateLimited)
        // The other transfers of that round were started before the cut: no second cut.
        for _ in 0..<20 { limiter.finished(.overloaded(.errors), startedEpoch: epoch, inFlight: 60, now: .now) }
        #expect(limiter.limit == 44)
        // A failure of a transfer started after the cut, among those twenty: cut again.
        limiter.finished(.overloaded(.errors), startedEpoch: limiter.epoch, inFlight: 30, now: .now)
        #expect(limiter.limit == 21)
        #expect(limiter.lastCut?.reason == .errors)
    }

    /// Up to one in ten of the last 32 transfers may be reset without a cut; the next one cuts.
    @Test func aFewResetsAreToleratedABurstIsNot() {
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, rounds: 2) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(limiter.limit == 32)
        for _ in 0..<28 { limiter.finished(.answered(latency: .milliseconds(40)), startedEpoch: 0, inFlight: 32, now: .now) }
        for _ in 0..<3 { limiter.finished(.overloaded(.errors), startedEpoch: 0, inFlight: 32, now: .now) }
        #expect(limiter.limit == 32)
        limiter.finished(.overloaded(.errors), startedEpoch: 0, inFlight: 32, now: .now)
        #expect(limiter.limit == 22)
        // A path failing one in fourteen at random (as the chaos test's upstream) keeps a
        // working limit instead of collapsing to one.
        var flaky = HostConcurrencyLimiter(maximum: 128)
        var draw: UInt64 = 42
        let run = Self.simulate(&flaky, rounds: 400) { _, _ in
            draw = draw &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return draw >> 33 % 1000 < 70 ? .overloaded(.errors) : .answered(latency: .milliseconds(20))
        }
        let settled = run.limits.suffix(200).sorted()
        #expect(settled[settled.count / 2] >= 5, "\(settled)")
    }

    /// A round's latency is its median: a slow tile or two (a render, a big body) is no queue.
    @Test func aFewSlowAnswersDoNotCut() {
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, rounds: 2) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(limiter.limit == 32)
        let run = Self.simulate(&limiter, rounds: 1) { _, index in
            .answered(latency: index < 3 ? .seconds(2) : .milliseconds(40))
        }
        #expect(run.limits == [64])
        #expect(limiter.lastCut == nil)
    }

    /// A server that allows N at once and answers 429 above: the limit ends below N+1 and the
    /// 429s stay few, because the step onto the failing level is probed ever more rarely.
    @Test(arguments: [4, 12, 40])
    func concurrencyLimitedServerIsProbedRarely(allowed: Int) {
        var limiter = HostConcurrencyLimiter(maximum: 128)
        // The transfers beyond the allowed number are the ones answered 429.
        let run = Self.simulate(&limiter, rounds: 2000) { _, index in
            index >= allowed ? .overloaded(.rateLimited) : .answered(latency: .milliseconds(20))
        }
        let settled = run.limits.suffix(1000)
        let completions = run.limits.reduce(0, +)
        #expect(settled.filter { $0 > allowed }.count <= 20, "\(settled.filter { $0 > allowed }.count) rounds above \(allowed)")
        #expect(Double(settled.reduce(0, +)) / Double(settled.count) >= Double(allowed) * 0.8)
        // The slow start's overshoot, then one 429 per step onto the failing level, which backs
        // off to once in 128 rounds: a fraction of a percent of the requests.
        print("a server allowing \(allowed): \(run.overloads) answers 429 of \(completions) requests")
        #expect(Double(run.overloads) <= Double(allowed) + 0.005 * Double(completions),
                "\(run.overloads) answers 429 of \(completions)")
    }

    /// A server with `workers` slots of 40 ms each: above them requests queue and latency grows
    /// with the number in flight while throughput stays flat. The limit settles near the knee.
    @Test(arguments: [4, 16, 64])
    func queueingServerSettlesNearTheKneeNotAtTheCap(workers: Int) {
        var limiter = HostConcurrencyLimiter(maximum: 256)
        let run = Self.simulate(&limiter, rounds: 600) { inFlight, _ in
            .answered(latency: .milliseconds(40) * max(1, Double(inFlight) / Double(workers)))
        }
        let settled = run.limits.suffix(300).sorted()
        // 1.5 × 40 ms + 5 ms tolerated: about 1.6 × the workers in flight, never the cap; the
        // baseline measurements drop to half of that for two rounds in sixteen.
        let median = settled[settled.count / 2]
        #expect(median >= workers && median <= workers * 2, "\(Set(settled).sorted())")
        #expect(settled.last! <= workers * 2, "\(Set(settled).sorted())")
    }

    @Test func latencyClimbWithoutErrorsCutsByTheGradient() {
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, rounds: 2) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(limiter.limit == 32)
        // Latency triples for one round (a stall): no cut, no growth.
        _ = Self.simulate(&limiter, rounds: 1) { _, _ in .answered(latency: .milliseconds(120)) }
        #expect(limiter.limit == 32)
        // And for a second: cut by threshold / latency = 65 / 120, but to 0.7 at most.
        _ = Self.simulate(&limiter, rounds: 1) { _, _ in .answered(latency: .milliseconds(120)) }
        #expect(limiter.limit == 22)
        // Holding a knee is routine: not reported as a slow-down.
        #expect(limiter.lastCut == nil)
    }

    @Test func fixedLimitNeverMoves() {
        var limiter = HostConcurrencyLimiter(maximum: 2, adaptive: false)
        let run = Self.simulate(&limiter, rounds: 50) { _, _ in .overloaded(.rateLimited) }
        #expect(Set(run.limits) == [2])
        #expect(limiter.lastCut == nil)
    }

    @Test func aLowerCeilingClampsTheLearntLimit() {
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, rounds: 4) { _, _ in .answered(latency: .milliseconds(10)) }
        #expect(limiter.limit == 128)
        limiter.setMaximum(2, adaptive: true)
        #expect(limiter.limit == 2)
        let run = Self.simulate(&limiter, rounds: 10) { _, _ in .answered(latency: .milliseconds(10)) }
        #expect(Set(run.limits) == [2])
    }
}
