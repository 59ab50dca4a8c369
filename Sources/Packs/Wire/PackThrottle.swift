/// What holds a downloading pack back (`progress.throttled`, openapi's `Throttle`): a host that
/// asked for a pause with `Retry-After`, or one whose transfers were cut after it answered
/// 429/503 or failed in a burst (timeouts, resets, truncated bodies). A dashboard shows it as
/// "upstream asked us to slow down".
public struct PackThrottle: Sendable, Equatable, Codable {
    public enum Reason: String, Sendable, Codable, CaseIterable {
        /// The host answered 429/503 with `Retry-After`: nothing is sent to it before `until`.
        case retryAfter = "retry_after"
        /// The host answered 429/503: fewer transfers go to it while it recovers.
        case rateLimited = "rate_limited"
        /// Timeouts, resets or truncated bodies: fewer transfers go to it while it recovers.
        case errors
    }

    /// `host[:port]` of the upstream (the port only when not the scheme's default).
    public var host: String
    public var reason: Reason
    /// The end of a `Retry-After` pause; absent while backing off, which ends when the host
    /// answers well again.
    public var until: Timestamp?

    public init(host: String, reason: Reason, until: Timestamp? = nil) {
        self.host = host
        self.reason = reason
        self.until = until
    }

    private enum CodingKeys: String, CodingKey {
        case host, reason, until
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(reason, forKey: .reason)
        try container.encodeIfPresent(until, forKey: .until)
    }
}
