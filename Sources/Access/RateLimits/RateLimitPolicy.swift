/// A rate limit as the HTTP fields of draft-ietf-httpapi-ratelimit-headers-11 (May 2026, §3 and
/// §4) advertise it: `quota` requests per `window` seconds under a policy name. packd enforces it
/// as a token bucket holding up to `quota` tokens, refilled continuously at `quota / window` per
/// second: a burst of `quota` requests is allowed at once, then the steady rate.
public struct RateLimitPolicy: Sendable, Equatable {
    public static let `default` = RateLimitPolicy(name: "default", quota: 1_200, window: 60)

    /// The policy's name in the fields: a short token (letters, digits, `-`, `_`).
    public let name: String
    /// Requests allowed in a window (the bucket's capacity), at least 1.
    public let quota: Int
    /// Seconds (the draft's `w`: a non-zero integer), at least 1.
    public let window: Int

    public init(name: String = "default", quota: Int, window: Int) {
        precondition(!name.isEmpty && name.utf8.allSatisfy { Base62.isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") },
                     "a rate-limit policy name is letters, digits, '-' and '_'")
        self.name = name
        self.quota = max(1, quota)
        self.window = max(1, window)
    }

    /// Tokens added per second.
    var refillPerSecond: Double { Double(quota) / Double(window) }

    /// `RateLimit-Policy: "default";q=1200;w=60` (§3: a List of Items whose value is a String).
    public var policyField: String { "\"\(name)\";q=\(quota);w=\(window)" }
}

/// What taking one request from a bucket decided, with the fields to answer it.
public struct RateLimitDecision: Sendable, Equatable {
    public let allowed: Bool
    /// Whole requests left in the bucket after this one (the draft's `r`).
    public let remaining: Int
    /// Seconds until the bucket is full again (the draft's `t`, §4.1.2: the window within which
    /// the client can use no more than `remaining`, give or take the refill; a server may change
    /// `r` and `t` from one answer to the next, as a continuously refilled bucket does).
    public let resetSeconds: Int
    /// For a refusal: whole seconds until one request is allowed again (`Retry-After`, RFC 9110 §10.2.3).
    public let retryAfterSeconds: Int?
    public let policy: RateLimitPolicy

    /// `RateLimit: "default";r=42;t=18` (§4).
    public var rateLimitField: String { "\"\(policy.name)\";r=\(remaining);t=\(resetSeconds)" }

    /// The fields to add to the answer — every answer, refusals (`429`) included.
    public var headerFields: [(name: String, value: String)] {
        var fields = [("RateLimit-Policy", policy.policyField), ("RateLimit", rateLimitField)]
        if let retryAfterSeconds { fields.append(("Retry-After", String(retryAfterSeconds))) }
        return fields
    }
}
