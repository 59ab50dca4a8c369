/// How many transfers one upstream host gets at once, learned from how it answers.
///
/// **The algorithm: AIMD on rounds, with a latency guard — TCP congestion control applied to
/// requests.** A *round* is as many completions as the limit (about one round trip when the limit
/// is in use), counting only transfers started in it (TCP grows its window on the
/// acknowledgements of what it sent in the round): the answers to transfers started under the
/// previous limit say nothing about the new one — counting them let the slow start double two or
/// three times before the first transfer at a new level had even reached the server. At the end
/// of a round in which a transfer had to wait for this limit:
///
/// - while the round's median latency stays within `latencyTolerance` × the host's baseline
///   (+ `latencySlack`), the limit grows — doubling per round at first (slow start), by one per
///   round after the first setback (congestion avoidance). At a steady latency, transfers in
///   flight ÷ latency *is* the throughput (Little's law), so "latency holds while the limit grows"
///   is "throughput keeps rising";
/// - the slow start also ends (without a cut) when two rounds running at the doubled limit
///   delivered less than `slowStartGain` × the throughput of the last round that grew it: the doubling is bought with
///   transfers that wait somewhere — in the server's queue, or in our own client when the
///   machine is the bottleneck — and more of them would only overshoot (a delay-based slow
///   start exit, as TCP's HyStart, measured as throughput because a host's mixed resources —
///   fonts answered at once next to tiles taking a render — make per-round latency bimodal);
/// - when the latency stays past the threshold for two rounds running, the server is queueing
///   our requests (one round may be a stall of our own loop): the limit shrinks by threshold ÷
///   latency (to 0.7 at most per cut), which lands it near the knee where more transfers stop
///   buying throughput. A round's latency is its median: a few slow tiles (a render among cache
///   hits, a large body) say nothing about the server's queue.
///   The round after such a cut checks it: draining a server's queue lowers latency in
///   proportion to the transfers taken away (Little's law at a flat throughput); when it falls
///   back under the threshold and far below that, the slow rounds were a stall on our side or
///   the path's, and the cut is undone (as TCP undoes a spurious timeout's) instead of the limit
///   creeping back a transfer per round.
///
/// A 429 or 503 shrinks the limit *at once* (not at the round's end) to `backoffFactor` × what
/// was in flight; so do timeouts, resets and truncated bodies once they are more than
/// `errorTolerance` of the last 32 transfers — a flaky path's odd reset is not load, a burst is.
/// Once per round: failures of transfers started before the cut are one signal, not twenty
/// (TCP's "once per window"). But a 429/503 also says *how far* the limit was too high: of L
/// transfers started under the refused level, R refused means the server took at most L − R at
/// once, so every further refusal of that level lowers the limit to L − R when that is below the
/// multiplicative cut (as DCTCP scales its cut by the share of marked packets) — one round trip
/// down instead of a cut per round with a wave of refusals each. A refusal during the slow start
/// halves the limit (TCP's ssthresh = cwnd / 2): the doubling overshot, and the last level that
/// worked was half.
/// After a 429/503 the step back up to the level that was refused waits 4 rounds, and each time
/// the same level is refused again the wait doubles (up to 128): a server with a hard limit is
/// probed ever more rarely, so its 429s stay few instead of one per sawtooth.
///
/// Why not a pure gradient limiter (Netflix Gradient2, Vegas)? Those steer by latency alone, and a
/// tile server's latency is noisy (cache hits next to renders, tile sizes over two orders of
/// magnitude); AIMD reacts to the explicit signals servers actually send (429/503, resets) without
/// needing latency to be clean, and the latency guard keeps it from filling a server's queue.
///
/// **Defaults, and why.** Start at 8: twice a browser's 6 connections per host, and within one
/// round of the old fixed 16. Ceiling 100 transfers on HTTP/2: streams, cheap for the server,
/// as many as RFC 9113 recommends a server allow on one connection (nginx announces 128,
/// Apache 100); at 100 ms a tile that is 1,000 tiles/s. packd spreads them over a few
/// connections (`FetchConfiguration.streamsPerConnection`, and the per-host connection cap that
/// keeps libcurl before 8.0 from opening one per transfer beyond them). 128 on HTTP/1.1, where each transfer is a
/// connection and a worker on the server; until the protocol is known, the HTTP/1.1 ceiling.
/// Tolerance 1.5 × baseline + 2 ms: WAN latency jitters by tens of percent (the 1.5 ×); the 2 ms
/// cover a loaded machine's scheduling jitter and no more. Against a near server, latency beyond
/// that is transfers waiting in packd's own loop: they buy no throughput, and everything else the
/// loop serves waits behind them. With 5 ms a download from nginx on loopback held ~100 transfers
/// in flight, no faster than ~16, and `GET /v1/packs/{id}` under it had a p99 of 10–13 ms
/// (`packd-bench api`); with 2 ms 5–8 ms and the same download rate alone — the download gives
/// way to such a flood of polls instead (1–4k tiles/s under it, from 4–7k) — and the same rates
/// from a server 20 ms away (`download-wan`, where 1.5 × the baseline is 30 ms). Baseline: the lowest round
/// median of the last two buckets of 16 rounds and at least a second each, so it follows a server
/// that really became slower; after the first setback each bucket starts with a measurement at
/// half the limit (as BBR's ProbeRTT), since a limit held above the knee would otherwise only
/// ever see queueing latency, take it for the baseline and ratchet up to the ceiling. Two rounds
/// at half the limit in eighteen cost a host about 5 % of its throughput; the floor of a second
/// keeps a near, fast server (rounds of a few milliseconds) from paying that several times a second.
///
/// A pure value: the fetcher feeds it with the loop's clock; tests feed it a synthetic one.
public struct HostConcurrencyLimiter: Sendable {
    public struct Settings: Sendable, Equatable {
        public var initial: Int
        /// The ceiling before the protocol is known, and on HTTP/1.1.
        public var http1Maximum: Int
        public var http2Maximum: Int
        public var latencyTolerance: Double
        public var latencySlack: Duration
        public var backoffFactor: Double
        /// The share of a round's transfers that may time out or be reset before the limit is cut.
        public var errorTolerance: Double
        /// The slow start keeps doubling while each round's throughput is at least this many
        /// times the previous round's.
        public var slowStartGain: Double

        public init(initial: Int = 8, http1Maximum: Int = 128, http2Maximum: Int = 100, latencyTolerance: Double = 1.5,
                    latencySlack: Duration = .milliseconds(2), backoffFactor: Double = 0.7, errorTolerance: Double = 0.1,
                    slowStartGain: Double = 1.25) {
            self.initial = max(1, initial)
            self.http1Maximum = max(1, http1Maximum)
            self.http2Maximum = max(1, http2Maximum)
            self.latencyTolerance = max(1, latencyTolerance)
            self.latencySlack = latencySlack
            self.backoffFactor = min(max(backoffFactor, 0.1), 0.95)
            self.errorTolerance = min(max(errorTolerance, 0), 0.5)
            self.slowStartGain = min(max(slowStartGain, 1), 2)
        }
    }

    /// What one finished transfer says about the host.
    public enum Signal: Sendable, Equatable {
        /// An answer that says nothing about load (404, 200, 304…), with the time from request
        /// sent to last byte.
        case answered(latency: Duration)
        /// "Slow down": 429/503 (`rateLimited`), a timeout, reset or truncation (`errors`).
        case overloaded(ThrottleReason)
        /// Neither (a 500, a refused address, a DNS failure): counted in the round only.
        case other
    }

    public let settings: Settings
    /// The ceiling: an explicit cap, or the protocol's.
    public private(set) var maximum: Int
    /// False: the limit is `maximum`, always.
    public private(set) var adaptive: Bool
    private var window: Double
    private var slowStart = true
    /// Bumped at each cut; transfers started before it cannot cause another.
    public private(set) var epoch: UInt64 = 0
    /// Bumped at each round's end and each cut: a round is judged on the transfers started in it.
    private var round: UInt64 = 0

    /// What a transfer carries from its start to `finished`: the cut epoch and the round it
    /// started in.
    public struct Ticket: Sendable, Equatable {
        let epoch: UInt64
        let round: UInt64
    }

    /// What a transfer starting now would carry.
    public var ticket: Ticket { Ticket(epoch: epoch, round: round) }

    /// A transfer starts: give the ticket back to `finished`. The first start begins the first
    /// round's clock.
    public mutating func start(now: ContinuousClock.Instant) -> Ticket {
        if roundStarted == nil { roundStarted = now }
        return ticket
    }

    private var roundCompletions = 0
    /// Every transfer that finished during the round, whenever it started: the host's
    /// throughput over the round.
    private var roundAnswers = 0
    /// The round's answer latencies in seconds; the round's latency is their median, which a
    /// few slow tiles (a render among cache hits, a slow body) do not move.
    private var roundLatencies: [Double] = []
    /// Which of the last (up to 32) finished transfers timed out, were reset or truncated.
    private var recentErrors: UInt32 = 0
    private var recentCount = 0
    private var roundLimited = false
    /// When the round began: the previous round's end, or the first transfer's start.
    private var roundStarted: ContinuousClock.Instant?
    /// The completions per second of the last slow-start round that grew the limit.
    private var slowStartRate: Double?
    /// Slow-start rounds in a row that bought too little throughput.
    private var slowStartShortfalls = 0

    private var baselineCurrent = Double.infinity
    private var baselinePrevious = Double.infinity
    private var roundsInBucket = 0
    private var bucketStarted: ContinuousClock.Instant?
    static let roundsPerBucket = 16
    /// A bucket also lasts at least this long: on a near, fast server 16 rounds are a few hundred
    /// milliseconds, and a probe (two rounds at half the limit) that often costs it 5 % of its
    /// throughput. (BBR probes every 10 s; a second still follows a server that became slower.)
    static let minimumBucketDuration = Duration.seconds(1)

    /// Measuring the baseline afresh (after a setback, at each new bucket): the limit
    /// is halved for a round that drains the server's queue, then a round that measures latency
    /// without it, then restored. Without this, a limit held above the knee only ever sees
    /// queueing latency, takes it for the baseline, and ratchets up to the ceiling.
    private enum Probe {
        case none
        case draining(restore: Double)
        case measuring(restore: Double)
    }
    private var probe = Probe.none

    /// Rounds in a row whose latency was above the threshold.
    private var highLatencyRounds = 0
    /// The last latency cut, until the round after it says whether it was right: the level it
    /// cut, the latency that cut it, and the share of the level kept.
    private var latencyCutUndo: (level: Double, latency: Double, share: Double)?
    private var lastCutLevel: Double?
    /// The level the last 429/503 cut found too high, the epoch its transfers started in, and how
    /// many of them have been refused.
    private var refusals: (level: Double, epoch: UInt64, count: Int)?
    private var stepRounds = 4
    private var roundsWaitingToStep = 0
    static let maxStepRounds = 128

    /// The latest cut for a slow-down signal (429/503, timeouts, resets): why and when, for the
    /// throttle status. Latency cuts are not recorded: they are how the limit holds a knee.
    public private(set) var lastCut: (reason: ThrottleReason, at: ContinuousClock.Instant)?
    /// The last round's median latency, for metrics.
    public private(set) var lastRoundLatency: Duration?

    public init(settings: Settings = Settings(), maximum: Int, adaptive: Bool = true) {
        self.settings = settings
        self.maximum = max(1, maximum)
        self.adaptive = adaptive
        window = Double(min(settings.initial, self.maximum))
    }

    /// Transfers the host may have in flight now.
    public var limit: Int { adaptive ? max(1, min(Int(window), maximum)) : maximum }

    /// The lowest recent round mean, nil before the first round.
    public var baseline: Duration? {
        let value = min(baselineCurrent, baselinePrevious)
        return value.isFinite ? .nanoseconds(Int64(value * 1e9)) : nil
    }

    /// Changes the ceiling (the protocol became known, a rule capped the host). The learnt window
    /// stays, clamped.
    public mutating func setMaximum(_ newMaximum: Int, adaptive: Bool) {
        maximum = max(1, newMaximum)
        self.adaptive = adaptive
        window = min(window, Double(maximum))
        if case .draining(let restore) = probe { probe = .draining(restore: min(restore, Double(maximum))) }
        if case .measuring(let restore) = probe { probe = .measuring(restore: min(restore, Double(maximum))) }
    }

    /// A transfer had to wait because the host was at its limit: the limit is what holds
    /// throughput back, so growing it can help.
    public mutating func noteLimited() {
        roundLimited = true
    }

    /// One transfer finished. `ticket` is what `ticket` was when it started; `inFlight` the host's
    /// transfers in flight, this one included.
    public mutating func finished(_ signal: Signal, ticket: Ticket, inFlight: Int, now: ContinuousClock.Instant) {
        guard adaptive else { return }
        let startedEpoch = ticket.epoch
        recentErrors = recentErrors << 1 | (signal == .overloaded(.errors) ? 1 : 0)
        recentCount = min(recentCount + 1, 32)
        let inRound = ticket.round == round
        roundAnswers += 1
        switch signal {
        case .answered(let latency):
            if inRound { roundLatencies.append(Self.seconds(latency)) }
        case .overloaded(.errors):
            // Up to one in ten of the last 32 transfers may fail without a cut: a flaky path's
            // odd reset is not load; a burst of them is.
            let errors = recentErrors.nonzeroBitCount
            if startedEpoch == epoch, Double(errors) > settings.errorTolerance * Double(max(recentCount, 10)) {
                cut(to: min(level, Double(inFlight)) * settings.backoffFactor, .errors, now)
            }
        case .overloaded(let reason):
            if startedEpoch == epoch {
                // Refused while doubling: the last level that worked is half this one.
                let refused = min(level, Double(inFlight))
                cut(to: refused * (slowStart ? 0.5 : settings.backoffFactor), reason, now)
                refusals = (refused, startedEpoch, 1)
            } else if var counted = refusals, counted.epoch == startedEpoch, epoch == startedEpoch &+ 1 {
                counted.count += 1
                refusals = counted
                lower(to: counted.level - Double(counted.count))
            }
        case .other:
            break
        }
        // A cut above started a new round: this transfer belongs to none.
        guard inRound, ticket.round == round else { return }
        roundCompletions += 1
        if roundCompletions >= limit { endRound(now) }
    }

    private mutating func endRound(_ now: ContinuousClock.Instant) {
        roundLatencies.sort()
        let latency = roundLatencies.isEmpty ? nil : roundLatencies[roundLatencies.count / 2]
        let limited = roundLimited
        let answers = roundAnswers
        let rate = roundStarted.map { Double(answers) / max(Self.seconds(now - $0), 1e-6) }
        startRound()
        roundStarted = now
        switch probe {
        case .draining(let restore):
            probe = .measuring(restore: restore)
            return
        case .measuring(let restore):
            probe = .none
            if let latency { record(latency, now) }
            window = min(restore, Double(maximum))
            return
        case .none:
            break
        }
        guard let latency else { return }
        record(latency, now)
        let threshold = min(baselineCurrent, baselinePrevious) * settings.latencyTolerance
            + Self.seconds(settings.latencySlack)
        if let undo = latencyCutUndo {
            latencyCutUndo = nil
            // A queue at the server drains in proportion to the cut (Little's law at a flat
            // throughput): latency × the share kept. Far lower, and back under the threshold, the
            // slow rounds were a stall of our own — a loaded machine not reading its sockets — or
            // of the path, not the server's knee: the cut is undone (as TCP undoes a spurious
            // timeout's), instead of creeping back one transfer a round.
            if latency <= threshold, latency < undo.latency * undo.share * 0.8 {
                window = max(window, min(undo.level, Double(maximum)))
                return
            }
        }
        if !slowStart, roundsInBucket == 0 {
            // A fresh bucket starts with a measurement at half the limit.
            probe = .draining(restore: window)
            window = max(1, (window / 2).rounded(.down))
            return
        }
        guard latency <= threshold else {
            // Two rounds running: a queue at the server persists, a stall of our own loop (a
            // loaded machine) or of one network path passes.
            highLatencyRounds += 1
            if highLatencyRounds >= 2 {
                let level = self.level
                cut(to: window * max(0.7, threshold / latency), nil, now)
                latencyCutUndo = (level, latency, window / level)
            }
            return
        }
        highLatencyRounds = 0
        guard limited else { return }
        if slowStart, let rate {
            if let previous = slowStartRate, rate < previous * settings.slowStartGain {
                // Two rounds running, as for latency: one round's throughput is noise on a
                // loaded machine or a jittery path, and ending the slow start early costs a
                // short download most of its speed.
                slowStartShortfalls += 1
                if slowStartShortfalls >= 2 { slowStart = false }
                return
            }
            slowStartShortfalls = 0
            slowStartRate = rate
        }
        grow()
    }

    /// One round's mean latency into the baseline's buckets.
    private mutating func record(_ latency: Double, _ now: ContinuousClock.Instant) {
        lastRoundLatency = .nanoseconds(Int64(latency * 1e9))
        baselineCurrent = min(baselineCurrent, latency)
        roundsInBucket += 1
        if bucketStarted == nil { bucketStarted = now }
        if roundsInBucket >= Self.roundsPerBucket, let started = bucketStarted, now - started >= Self.minimumBucketDuration {
            bucketStarted = now
            baselinePrevious = baselineCurrent
            baselineCurrent = .infinity
            roundsInBucket = 0
        }
    }

    private mutating func grow() {
        if slowStart {
            window = min(window * 2, Double(maximum))
            return
        }
        // The steps onto the level that failed last and the one above it wait their rounds (the
        // transfers in flight may not have reached the new limit in the round before); every
        // other step is one round.
        if let level = lastCutLevel, window < level + 1, window + 1 >= level {
            roundsWaitingToStep += 1
            guard roundsWaitingToStep >= stepRounds else { return }
            roundsWaitingToStep = 0
        }
        window = min(window + 1, Double(maximum))
    }

    /// The limit the host is held to outside a probe.
    private var level: Double {
        switch probe {
        case .none: window
        case .draining(let restore), .measuring(let restore): restore
        }
    }

    /// `reason` nil: a latency cut, the limiter holding a server's knee — routine, not a
    /// slow-down to report.
    private mutating func cut(to target: Double, _ reason: ThrottleReason?, _ now: ContinuousClock.Instant) {
        let level = self.level
        probe = .none
        latencyCutUndo = nil
        // Only "too many requests" says where a ceiling is: the step onto its level waits, longer
        // each time it is refused again. Resets and latency leave that memory alone.
        if reason == .rateLimited {
            if let last = lastCutLevel, abs(level - last) <= 1 {
                stepRounds = min(stepRounds * 2, Self.maxStepRounds)
            } else {
                stepRounds = 4
            }
            lastCutLevel = level
            roundsWaitingToStep = 0
        }
        highLatencyRounds = 0
        window = max(1, min(level, target.rounded(.down)))
        slowStart = false
        epoch &+= 1
        if let reason { lastCut = (reason, now) }
        // The transfers started before the cut belong to no round: the next is judged on those
        // started under the new limit.
        startRound()
        roundStarted = now
        // Failures of transfers started before the cut must not cut again.
        recentErrors = 0
        recentCount = 0
    }

    /// Caps the limit (and the one a baseline probe will restore) without starting a new epoch.
    private mutating func lower(to target: Double) {
        let capped = max(1, target.rounded(.down))
        window = min(window, capped)
        switch probe {
        case .none: break
        case .draining(let restore): probe = .draining(restore: min(restore, capped))
        case .measuring(let restore): probe = .measuring(restore: min(restore, capped))
        }
    }

    private mutating func startRound() {
        round &+= 1
        roundCompletions = 0
        roundAnswers = 0
        roundLatencies.removeAll(keepingCapacity: true)
        roundLimited = false
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Why a host is being held back.
public enum ThrottleReason: String, Sendable, Equatable {
    /// The host answered 429 or 503 with `Retry-After`: no new transfer starts before `until`.
    case retryAfter = "retry_after"
    /// 429 or 503: the limiter cut the host's transfers.
    case rateLimited = "rate_limited"
    /// Timeouts, resets or truncated bodies: the limiter cut the host's transfers.
    case errors
}
