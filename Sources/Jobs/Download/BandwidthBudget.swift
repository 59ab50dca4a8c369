import Loop

/// A pack's `limits.max_bytes_per_second`: a rolling-average cap on the bytes it receives, as
/// Mapbox's `averageBytesPerSecond` — bursts allowed, the average held. A byte bucket refilled
/// at the cap, holding at most half a second of it: a new transfer may start while the balance,
/// less what transfers already under way are expected to bring, is positive. Received bytes are
/// charged when they arrive, so a large body puts the bucket in debt and later starts wait it
/// out. Over any stretch of a download the bytes received stay within
/// `cap × seconds + burst + one body`.
struct BandwidthBudget {
    let bytesPerSecond: Double
    let burst: Double
    private var balance: Double
    private var refilled: ContinuousClock.Instant
    /// Bytes expected from transfers started and not yet answered.
    private var reserved: Double = 0
    /// Running mean of received bodies: the expectation for a transfer just started.
    private var meanBody: Double = 0
    private var bodies: Double = 0

    init(bytesPerSecond: Int64, now: ContinuousClock.Instant) {
        self.bytesPerSecond = Double(max(bytesPerSecond, 1))
        burst = self.bytesPerSecond / 2
        balance = burst
        refilled = now
    }

    /// Whether a transfer may start now; if so it is counted as under way.
    mutating func startTransfer(now: ContinuousClock.Instant) -> Bool {
        refill(now)
        guard balance - reserved > 0 else { return false }
        reserved += meanBody
        return true
    }

    /// A response (of any status) arrived with `bytes` of body.
    mutating func received(_ bytes: Int, now: ContinuousClock.Instant) {
        refill(now)
        balance -= Double(bytes)
        reserved = max(0, reserved - meanBody)
        bodies += 1
        meanBody += (Double(bytes) - meanBody) / bodies
    }

    /// How long until a transfer may start again (zero when it may now).
    mutating func wait(now: ContinuousClock.Instant) -> Duration {
        refill(now)
        let missing = reserved - balance
        guard missing >= 0 else { return .zero }
        // One millisecond past the point where the balance turns positive.
        return .milliseconds(Int64((missing / bytesPerSecond * 1000).rounded(.up)) + 1)
    }

    private mutating func refill(_ now: ContinuousClock.Instant) {
        let elapsed = now - refilled
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        balance = min(burst, balance + max(0, seconds) * bytesPerSecond)
        refilled = now
    }
}

/// A pack's bandwidth cap on the loop: whether another transfer may start now, and a timer that
/// calls back once one may. Loop thread only.
final class BandwidthGate {
    private var budget: BandwidthBudget
    private let timer: LoopTimer
    private var waiting = false

    init(bytesPerSecond: Int64, loop: EventLoop) {
        budget = BandwidthBudget(bytesPerSecond: bytesPerSecond, now: .now)
        timer = LoopTimer(loop: loop)
    }

    /// Waiting for the budget to allow the next start.
    var isWaiting: Bool { waiting }

    /// True (and the transfer is counted as under way) when one may start now; otherwise
    /// `ready` runs once one may.
    func allowsStart(ready: @escaping () -> Void) -> Bool {
        if waiting { return false }
        let now = ContinuousClock.now
        if budget.startTransfer(now: now) { return true }
        waiting = true
        timer.start(after: max(LoopTimer.milliseconds(budget.wait(now: now)), 1)) { [weak self] in
            guard let self else { return }
            waiting = false
            ready()
        }
        return false
    }

    /// An answer arrived with `bytes` of body.
    func received(_ bytes: Int) {
        budget.received(bytes, now: .now)
    }

    func close() {
        timer.close()
    }
}
