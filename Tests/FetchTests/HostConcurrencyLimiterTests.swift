import Fetch
import Testing

/// The limiter on a synthetic clock against simulated servers: every transfer in flight, one
/// round after another, so its decisions are checked exactly (the socket tests check the same
/// behaviour end to end, with real timing).
@Suite struct HostConcurrencyLimiterTests {
    /// Runs `rounds` rounds: each round the host is kept at its limit (a transfer waits), and the
    /// n-th transfer in flight finishes with what `server(inFlight, n)` says, the round taking its
    /// median latency. Returns the limit
    /// after each round and the number of overload answers.
    static func simulate(_ limiter: inout HostConcurrencyLimiter, clock: SyntheticClock, rounds: Int,
                         roundDuration: ((Int) -> Duration)? = nil,
                         server: (Int, Int) -> HostConcurrencyLimiter.Signal) -> (limits: [Int], overloads: Int) {
        var limits: [Int] = []
        var overloads = 0
        for _ in 0..<rounds {
            let inFlight = limiter.limit
            let ticket = limiter.start(now: clock.now)
            limiter.noteLimited()
            let signals = (0..<inFlight).map { server(inFlight, $0) }
            // The round lasts its median latency (throughput is in flight ÷ latency): a straggler's
            // slot is refilled by transfers of the same round that end it instead.
            let latencies = signals.map { if case .answered(let latency) = $0 { latency } else { Duration.milliseconds(1) } }.sorted()
            let duration = roundDuration?(inFlight) ?? latencies[latencies.count / 2]
            for signal in signals {
                if case .overloaded = signal { overloads += 1 }
                limiter.finished(signal, ticket: ticket, inFlight: inFlight, now: clock.advance(by: duration / inFlight))
            }
            limits.append(limiter.limit)
        }
        return (limits, overloads)
    }

    @Test func slowStartDoublesWhileLatencyHoldsUpToTheCeiling() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        #expect(limiter.limit == 8)
        let run = Self.simulate(&limiter, clock: clock, rounds: 6) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(run.limits == [16, 32, 64, 128, 128, 128])
    }

    /// The client itself is the bottleneck (a loaded machine: 2,000 answers a second at most,
    /// whatever is in flight) while each answer still takes 5 ms once sent. Latency cannot see it;
    /// throughput does: the slow start stops doubling once a round at twice the limit delivers
    /// no more two rounds running, and the limit then creeps up by one per round instead of doubling to the ceiling
    /// (where, against a server allowing a few at once, it would meet a wave of 429s).
    @Test func slowStartEndsWhenDoublingBuysNoThroughput() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        let run = Self.simulate(&limiter, clock: clock, rounds: 6,
                                roundDuration: { inFlight in max(.milliseconds(5), .microseconds(500) * inFlight) }) { _, _ in
            .answered(latency: .milliseconds(5))
        }
        // 8 → 1,600/s, 16 → 2,000/s (× 1.25: grow), 32 → 2,000/s twice: the slow start ends.
        #expect(run.limits == [16, 32, 32, 32, 33, 34])
        #expect(limiter.lastCut == nil)
    }

    /// A round is judged on the transfers started in it: answers to transfers started under the
    /// previous limit (a reused connection answering while the new ones are still connecting)
    /// do not end it, however many arrive, so the slow start cannot double ahead of the evidence.
    @Test func onlyTransfersStartedInARoundEndIt() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        let first = limiter.ticket
        limiter.noteLimited()
        for _ in 0..<8 { limiter.finished(.answered(latency: .milliseconds(40)), ticket: first, inFlight: 8, now: clock.advance()) }
        #expect(limiter.limit == 16)
        limiter.noteLimited()
        for _ in 0..<40 { limiter.finished(.answered(latency: .milliseconds(40)), ticket: first, inFlight: 16, now: clock.advance()) }
        #expect(limiter.limit == 16)
        let second = limiter.ticket
        for _ in 0..<16 { limiter.finished(.answered(latency: .milliseconds(40)), ticket: second, inFlight: 16, now: clock.advance()) }
        #expect(limiter.limit == 32)
        // After a cut, the transfers started before it belong to no round either.
        let beforeCut = limiter.ticket
        limiter.finished(.overloaded(.rateLimited), ticket: beforeCut, inFlight: 32, now: clock.advance())
        let cut = limiter.limit
        limiter.noteLimited()
        for _ in 0..<100 { limiter.finished(.answered(latency: .milliseconds(40)), ticket: beforeCut, inFlight: 32, now: clock.advance()) }
        #expect(limiter.limit == cut)
    }

    /// A slow start that overshot a server allowing 6 at once to 64: the first refusal cuts
    /// (to 32: refused while doubling, the last level that worked was half), the others of that
    /// level say how far too high it was — 58 refused of 64, so the server takes at most 6 — and
    /// the limit lands there at once instead of stepping down a wave of refusals at a time.
    @Test func refusalsOfTheRefusedLevelLowerTheLimitToWhatTheServerTook() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, clock: clock, rounds: 3) { _, _ in .answered(latency: .milliseconds(5)) }
        #expect(limiter.limit == 64)
        let run = Self.simulate(&limiter, clock: clock, rounds: 1) { _, index in
            index >= 6 ? .overloaded(.rateLimited) : .answered(latency: .milliseconds(5))
        }
        #expect(run.limits == [6])
        #expect(run.overloads == 58)
        // Few refusals of a level: the cut stands.
        var few = HostConcurrencyLimiter(maximum: 128)
        let fewClock = SyntheticClock()
        _ = Self.simulate(&few, clock: fewClock, rounds: 3) { _, _ in .answered(latency: .milliseconds(5)) }
        let at64 = few.ticket
        _ = Self.simulate(&few, clock: fewClock, rounds: 1) { _, index in
            index >= 60 ? .overloaded(.rateLimited) : .answered(latency: .milliseconds(5))
        }
        #expect(few.limit == 32)
        // The level of 32 refused too: cut to 0.7 × 32 (the slow start is over), then its 20
        // further refusals take it to 32 − 21.
        let at32 = few.ticket
        few.finished(.overloaded(.rateLimited), ticket: at32, inFlight: 32, now: fewClock.advance())
        #expect(few.limit == 22)
        for _ in 0..<20 { few.finished(.overloaded(.rateLimited), ticket: at32, inFlight: 32, now: fewClock.advance()) }
        #expect(few.limit == 11)
        // Refusals of transfers started under a level older than the one cut say nothing more.
        for _ in 0..<20 { few.finished(.overloaded(.rateLimited), ticket: at64, inFlight: 11, now: fewClock.advance()) }
        #expect(few.limit == 11)
    }

    @Test func aLimitThatHoldsNothingBackDoesNotGrow() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        for _ in 0..<100 {
            limiter.finished(.answered(latency: .milliseconds(40)), ticket: limiter.ticket, inFlight: 3, now: clock.advance())
        }
        #expect(limiter.limit == 8)
    }

    @Test func overloadCutsAtOnceAndOnlyOncePerRound() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, clock: clock, rounds: 3) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(limiter.limit == 64)
        let ticket = limiter.ticket
        limiter.finished(.overloaded(.rateLimited), ticket: ticket, inFlight: 64, now: clock.advance())
        #expect(limiter.limit == 32)  // refused while doubling: half
        #expect(limiter.lastCut?.reason == .rateLimited)
        // The other transfers of that round were started before the cut: no second cut.
        for _ in 0..<20 { limiter.finished(.overloaded(.errors), ticket: ticket, inFlight: 60, now: clock.advance()) }
        #expect(limiter.limit == 32)
        // A failure of a transfer started after the cut, among those twenty: cut again.
        limiter.finished(.overloaded(.errors), ticket: limiter.ticket, inFlight: 30, now: clock.advance())
        #expect(limiter.limit == 21)
        #expect(limiter.lastCut?.reason == .errors)
    }

    /// Up to one in ten of the last 32 transfers may be reset without a cut; the next one cuts.
    @Test func aFewResetsAreToleratedABurstIsNot() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, clock: clock, rounds: 2) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(limiter.limit == 32)
        let ticket = limiter.ticket
        for _ in 0..<28 { limiter.finished(.answered(latency: .milliseconds(40)), ticket: ticket, inFlight: 32, now: clock.advance()) }
        for _ in 0..<3 { limiter.finished(.overloaded(.errors), ticket: ticket, inFlight: 32, now: clock.advance()) }
        #expect(limiter.limit == 32)
        limiter.finished(.overloaded(.errors), ticket: ticket, inFlight: 32, now: clock.advance())
        #expect(limiter.limit == 22)
        // A path failing one in fourteen at random (as the chaos test's upstream) keeps a
        // working limit instead of collapsing to one.
        var flaky = HostConcurrencyLimiter(maximum: 128)
        var draw: UInt64 = 42
        let run = Self.simulate(&flaky, clock: SyntheticClock(), rounds: 400) { _, _ in
            draw = draw &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return draw >> 33 % 1000 < 70 ? .overloaded(.errors) : .answered(latency: .milliseconds(20))
        }
        let settled = run.limits.suffix(200).sorted()
        #expect(settled[settled.count / 2] >= 5, "\(settled)")
    }

    /// A round's latency is its median: a slow tile or two (a render, a big body) is no queue.
    @Test func aFewSlowAnswersDoNotCut() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, clock: clock, rounds: 2) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(limiter.limit == 32)
        let run = Self.simulate(&limiter, clock: clock, rounds: 1) { _, index in
            .answered(latency: index < 3 ? .seconds(2) : .milliseconds(40))
        }
        #expect(run.limits == [64])
        #expect(limiter.lastCut == nil)
    }

    /// A server that allows N at once and answers 429 above: the limit ends below N+1 and the
    /// 429s stay few, because the step onto the failing level is probed ever more rarely.
    @Test(arguments: [4, 12, 40])
    func concurrencyLimitedServerIsProbedRarely(allowed: Int) {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        // The transfers beyond the allowed number are the ones answered 429.
        let run = Self.simulate(&limiter, clock: clock, rounds: 2000) { _, index in
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
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 256)
        let run = Self.simulate(&limiter, clock: clock, rounds: 600) { inFlight, _ in
            .answered(latency: .milliseconds(40) * max(1, Double(inFlight) / Double(workers)))
        }
        let settled = run.limits.suffix(300).sorted()
        // 1.5 × 40 ms + 2 ms tolerated: about 1.6 × the workers in flight, never the cap; the
        // baseline measurements drop to half of that for two rounds in sixteen.
        let median = settled[settled.count / 2]
        #expect(median >= workers && median <= workers * 2, "\(Set(settled).sorted())")
        #expect(settled.last! <= workers * 2, "\(Set(settled).sorted())")
    }

    /// A near, fast server (rounds of 5 ms, 200 a second) once the slow start is over: the
    /// baseline probe — two rounds at half the limit — comes at most once a second, not every
    /// 16 rounds (which cost such a host 5 % of its throughput), while a slow server (rounds of
    /// 100 ms) is still probed every 16 rounds.
    @Test(arguments: [(5, 2_000, 10), (100, 96, 6)])
    func baselineProbesComeEveryFewRoundsButAtMostOnceASecond(latencyMilliseconds: Int, rounds: Int, maximumProbes: Int) {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 100)
        let latency = Duration.milliseconds(latencyMilliseconds)
        _ = Self.simulate(&limiter, clock: clock, rounds: 3) { _, _ in .answered(latency: latency) }
        // A reset burst ends the slow start: probing starts after the first setback.
        for _ in 0..<8 { limiter.finished(.overloaded(.errors), ticket: limiter.ticket, inFlight: limiter.limit, now: clock.advance()) }
        let run = Self.simulate(&limiter, clock: clock, rounds: rounds) { _, _ in .answered(latency: latency) }
        let probes = zip(run.limits, run.limits.dropFirst()).filter { $1 * 2 <= $0 + 1 }.count
        // 2,000 rounds of 5 ms are 10 s: one probe a second. 96 rounds of 100 ms: one in 16 rounds.
        #expect(probes >= maximumProbes - 2 && probes <= maximumProbes, "\(probes) probes: \(run.limits)")
    }

    @Test func latencyClimbWithoutErrorsCutsByTheGradient() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, clock: clock, rounds: 2) { _, _ in .answered(latency: .milliseconds(40)) }
        #expect(limiter.limit == 32)
        // Latency triples for one round (a stall): no cut, no growth.
        _ = Self.simulate(&limiter, clock: clock, rounds: 1) { _, _ in .answered(latency: .milliseconds(120)) }
        #expect(limiter.limit == 32)
        // And for a second: cut by threshold / latency = 65 / 120, but to 0.7 at most.
        _ = Self.simulate(&limiter, clock: clock, rounds: 1) { _, _ in .answered(latency: .milliseconds(120)) }
        #expect(limiter.limit == 22)
        // Holding a knee is routine: not reported as a slow-down.
        #expect(limiter.lastCut == nil)
    }

    /// Two slow rounds that were a stall of our own (a loaded machine reading its sockets late):
    /// the round after the cut answers at the baseline, far below what draining a server's
    /// queue by 0.7 would give, so the cut is undone instead of creeping back a transfer a round.
    /// A real queue (latency in proportion to what is in flight) keeps its cut.
    @Test func aLatencyCutThatTheNextRoundContradictsIsUndone() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, clock: clock, rounds: 3) { _, _ in .answered(latency: .milliseconds(20)) }
        #expect(limiter.limit == 64)
        _ = Self.simulate(&limiter, clock: clock, rounds: 2) { _, _ in .answered(latency: .milliseconds(50)) }
        #expect(limiter.limit == 44)
        _ = Self.simulate(&limiter, clock: clock, rounds: 1) { _, _ in .answered(latency: .milliseconds(21)) }
        #expect(limiter.limit == 64)
        #expect(limiter.lastCut == nil)

        // A server with 32 workers of 20 ms: at 64 in flight answers take 40 ms; cut to 0.7,
        // they take 28 ms — what the queue explains — and the cut stands.
        var queued = HostConcurrencyLimiter(maximum: 128)
        let queueClock = SyntheticClock()
        _ = Self.simulate(&queued, clock: queueClock, rounds: 3) { inFlight, _ in
            .answered(latency: .milliseconds(20) * max(1, Double(inFlight) / 32))
        }
        #expect(queued.limit == 64)
        let run = Self.simulate(&queued, clock: queueClock, rounds: 3) { inFlight, _ in
            .answered(latency: .milliseconds(20) * max(1, Double(inFlight) / 32))
        }
        #expect(run.limits[1] < 64 && run.limits[2] < 64, "\(run.limits)")
    }

    @Test func fixedLimitNeverMoves() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 2, adaptive: false)
        let run = Self.simulate(&limiter, clock: clock, rounds: 50) { _, _ in .overloaded(.rateLimited) }
        #expect(Set(run.limits) == [2])
        #expect(limiter.lastCut == nil)
    }

    @Test func aLowerCeilingClampsTheLearntLimit() {
        let clock = SyntheticClock()
        var limiter = HostConcurrencyLimiter(maximum: 128)
        _ = Self.simulate(&limiter, clock: clock, rounds: 4) { _, _ in .answered(latency: .milliseconds(10)) }
        #expect(limiter.limit == 128)
        limiter.setMaximum(2, adaptive: true)
        #expect(limiter.limit == 2)
        let run = Self.simulate(&limiter, clock: clock, rounds: 10) { _, _ in .answered(latency: .milliseconds(10)) }
        #expect(Set(run.limits) == [2])
    }
}

/// Time for the limiter in tests: moves only when told.
final class SyntheticClock {
    private(set) var now = ContinuousClock.now

    func advance(by step: Duration = .milliseconds(1)) -> ContinuousClock.Instant {
        now += step
        return now
    }
}
