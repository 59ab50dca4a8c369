/// Requests-per-second politeness for one host: up to `burst` requests at once, refilled at
/// `rate` per second.
struct TokenBucket {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var refilled: ContinuousClock.Instant

    init(rate: Double, now: ContinuousClock.Instant) {
        self.rate = max(rate, 0.001)
        self.burst = max(1, rate)
        self.tokens = burst
        self.refilled = now
    }

    /// Takes a token and returns nil, or returns how long until one is available.
    mutating func take(now: ContinuousClock.Instant) -> Duration? {
        let elapsed = now - refilled
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        tokens = min(burst, tokens + max(0, seconds) * rate)
        refilled = now
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return .milliseconds(Int(((1 - tokens) / rate * 1000).rounded(.up)))
    }
}
