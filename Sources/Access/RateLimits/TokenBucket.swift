/// One caller's bucket: `tokens` as of `updated` (seconds on a monotonic clock). A pure value.
struct TokenBucket: Sendable, Equatable {
    private(set) var tokens: Double
    private(set) var updated: Double

    /// A full bucket.
    init(policy: RateLimitPolicy, now: Double) {
        tokens = Double(policy.quota)
        updated = now
    }

    /// The tokens at `now`, without taking one.
    func tokens(at now: Double, policy: RateLimitPolicy) -> Double {
        min(Double(policy.quota), tokens + max(0, now - updated) * policy.refillPerSecond)
    }

    /// Whether the bucket is full at `now`: such a bucket is the same as no bucket, so it can be dropped.
    func isFull(at now: Double, policy: RateLimitPolicy) -> Bool {
        tokens(at: now, policy: policy) >= Double(policy.quota)
    }

    /// Takes one token when there is one; the decision either way.
    mutating func take(now: Double, policy: RateLimitPolicy) -> RateLimitDecision {
        // A clock that steps back (it is monotonic, but tests pass their own) never refills.
        let now = max(now, updated)
        tokens = tokens(at: now, policy: policy)
        updated = now
        let allowed = tokens >= 1
        if allowed { tokens -= 1 }
        let rate = policy.refillPerSecond
        let reset = Int(((Double(policy.quota) - tokens) / rate).rounded(.up))
        let retry = allowed ? nil : max(1, Int(((1 - tokens) / rate).rounded(.up)))
        return RateLimitDecision(allowed: allowed, remaining: Int(tokens.rounded(.down)), resetSeconds: reset,
                                 retryAfterSeconds: retry, policy: policy)
    }
}
