@testable import Access
import Testing

@Suite struct RateLimiterTests {
    @Test func allowsTheBurstThenTheSteadyRate() {
        let policy = RateLimitPolicy(quota: 10, window: 5) // 2 per second
        var limiter = RateLimiter()
        for taken in 1...10 {
            let decision = limiter.take("key:a", policy: policy, now: 100)
            #expect(decision.allowed && decision.remaining == 10 - taken && decision.retryAfterSeconds == nil)
        }
        let refused = limiter.take("key:a", policy: policy, now: 100)
        #expect(!refused.allowed && refused.remaining == 0 && refused.retryAfterSeconds == 1 && refused.resetSeconds == 5)
        // Half a second later one token is back.
        #expect(limiter.take("key:a", policy: policy, now: 100.5).allowed)
        #expect(!limiter.take("key:a", policy: policy, now: 100.5).allowed)
        // Another caller has its own bucket.
        #expect(limiter.take("key:b", policy: policy, now: 100.5).remaining == 9)
        // A long pause refills to the quota, not beyond.
        #expect(limiter.take("key:a", policy: policy, now: 1_000).remaining == 9)
    }

    @Test func answersWithTheDraftFields() {
        let policy = RateLimitPolicy(name: "default", quota: 100, window: 60)
        var limiter = RateLimiter()
        var decision = limiter.take("link:42", policy: policy, now: 0)
        for _ in 0..<57 { decision = limiter.take("link:42", policy: policy, now: 0) }
        #expect(policy.policyField == #""default";q=100;w=60"#)
        // 42 left; 58 used refill at 100/60 per second: full after 34.8 s, said as 35.
        #expect(decision.rateLimitField == #""default";r=42;t=35"#)
        #expect(decision.headerFields.map(\.name) == ["RateLimit-Policy", "RateLimit"])
        for _ in 0..<42 { _ = limiter.take("link:42", policy: policy, now: 0) }
        let refused = limiter.take("link:42", policy: policy, now: 0)
        #expect(refused.headerFields.map(\.name) == ["RateLimit-Policy", "RateLimit", "Retry-After"])
        #expect(refused.headerFields.last?.value == "1" && refused.rateLimitField == #""default";r=0;t=60"#)
    }

    @Test func memoryStaysBounded() {
        let policy = RateLimitPolicy(quota: 5, window: 1)
        var limiter = RateLimiter(capacity: 1_000, sweepInterval: 10)
        for index in 0..<50_000 {
            _ = limiter.take("key:\(index)", policy: policy, now: Double(index) * 0.001)
            #expect(limiter.count <= 1_000)
        }
        // A second later every bucket has refilled: the sweep drops them all.
        _ = limiter.take("key:x", policy: policy, now: 1_000)
        #expect(limiter.count == 1)
    }

    @Test func evictsTheLeastRecentlyUsedWhenEveryBucketIsBusy() {
        let policy = RateLimitPolicy(quota: 1, window: 3_600)
        var limiter = RateLimiter(capacity: 16, sweepInterval: 1e9)
        for index in 0..<16 { _ = limiter.take("key:\(index)", policy: policy, now: Double(index)) }
        // key:15 is the most recently used: it keeps its empty bucket when key:16 arrives.
        _ = limiter.take("key:16", policy: policy, now: 20)
        #expect(limiter.count <= 16)
        #expect(!limiter.take("key:15", policy: policy, now: 21).allowed)
        #expect(limiter.take("key:0", policy: policy, now: 21).allowed, "the oldest was evicted: a new, full bucket")
    }

    @Test func aClockSteppingBackNeverRefills() {
        let policy = RateLimitPolicy(quota: 1, window: 10)
        var limiter = RateLimiter()
        #expect(limiter.take("k", policy: policy, now: 50).allowed)
        #expect(!limiter.take("k", policy: policy, now: 10).allowed)
        #expect(!limiter.take("k", policy: policy, now: 55).allowed)
        #expect(limiter.take("k", policy: policy, now: 60).allowed)
    }
}
