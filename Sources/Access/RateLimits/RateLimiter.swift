/// Token buckets per caller (`Principal.rateLimitKey`: a key, a token's subject, a device link),
/// each under its tenant's policy. Memory is bounded: a full bucket is dropped (it is the same as
/// none), swept every `sweepInterval`; when `capacity` buckets are still in use the least
/// recently used eighth goes (those callers start again with a full bucket — the price of a
/// bound, paid only under more than `capacity` simultaneously active callers).
///
/// A value owned by one thread (the loop's): no locks. `now` is seconds on a monotonic clock.
public struct RateLimiter: Sendable {
    public let capacity: Int
    public let sweepInterval: Double

    private struct Entry: Sendable {
        var bucket: TokenBucket
        var policy: RateLimitPolicy
        var lastUsed: Double
    }

    private var entries: [String: Entry] = [:]
    private var lastSweep: Double?

    public init(capacity: Int = 65_536, sweepInterval: Double = 60) {
        self.capacity = max(8, capacity)
        self.sweepInterval = sweepInterval
    }

    /// Buckets held now.
    public var count: Int { entries.count }

    /// Takes one request for `key` under `policy`.
    public mutating func take(_ key: String, policy: RateLimitPolicy, now: Double) -> RateLimitDecision {
        if lastSweep.map({ now - $0 >= sweepInterval }) ?? true {
            sweep(now: now)
        }
        if var entry = entries[key] {
            if entry.policy != policy {
                // The tenant's policy changed: keep what was used, within the new capacity.
                entry.policy = policy
            }
            let decision = entry.bucket.take(now: now, policy: policy)
            entry.lastUsed = now
            entries[key] = entry
            return decision
        }
        if entries.count >= capacity {
            sweep(now: now)
            if entries.count >= capacity { evictLeastRecentlyUsed() }
        }
        var bucket = TokenBucket(policy: policy, now: now)
        let decision = bucket.take(now: now, policy: policy)
        entries[key] = Entry(bucket: bucket, policy: policy, lastUsed: now)
        return decision
    }

    /// Drops every bucket that has refilled completely.
    public mutating func sweep(now: Double) {
        lastSweep = now
        entries = entries.filter { !$0.value.bucket.isFull(at: now, policy: $0.value.policy) }
    }

    private mutating func evictLeastRecentlyUsed() {
        let victims = entries.sorted { $0.value.lastUsed < $1.value.lastUsed }.prefix(max(1, capacity / 8))
        for (key, _) in victims { entries[key] = nil }
    }
}
