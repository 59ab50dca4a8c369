import Packs

/// When a failed delivery is tried again (pure): after attempt n the n-th delay — about 5 s,
/// 5 min, 30 min, 2 h, 5 h, 10 h, then 10 h again — each with ±10 % jitter so receivers that
/// failed together are not hit together again, and never earlier than a `Retry-After`; until
/// the delivery's deadline (its age reaching `maxAge`, or a manual retry's extension), after
/// which it fails.
public struct RetrySchedule: Sendable, Equatable {
    /// The delay after the 1st, 2nd… failed attempt; the last one repeats.
    public var delays: [Duration]
    /// The fraction each delay may move either way.
    public var jitter: Double
    /// How long a delivery is tried (`--webhook-max-age`).
    public var maxAge: Duration

    public static let standardDelays: [Duration] = [
        .seconds(5), .seconds(300), .seconds(1800), .seconds(7200), .seconds(18_000), .seconds(36_000), .seconds(36_000),
    ]

    public init(delays: [Duration] = RetrySchedule.standardDelays, jitter: Double = 0.1, maxAge: Duration = .seconds(3 * 86_400)) {
        self.delays = delays.isEmpty ? [.seconds(5)] : delays
        self.jitter = min(max(jitter, 0), 0.5)
        self.maxAge = maxAge
    }

    /// The time (Unix ms) of the attempt after failed attempt number `attempt` (1 for the first)
    /// made at `now`, or nil when that would be past the deadline. `unit` is a random number in
    /// 0..<1 (the jitter's draw), `retryAfter` what the receiver asked for.
    public func nextAttempt(after attempt: Int64, now: Int64, createdAt: Int64, retryUntil: Int64?, retryAfter: Duration?,
                            unit: Double) -> Int64? {
        let delay = delays[Int(min(max(attempt, 1), Int64(delays.count))) - 1]
        let jittered = Double(Self.milliseconds(delay)) * (1 + jitter * (2 * min(max(unit, 0), 1) - 1))
        let wait = max(Int64(jittered.rounded()), retryAfter.map(Self.milliseconds) ?? 0)
        let next = now + wait
        return next <= deadline(createdAt: createdAt, retryUntil: retryUntil) ? next : nil
    }

    /// The last moment a delivery written at `createdAt` may be attempted.
    public func deadline(createdAt: Int64, retryUntil: Int64?) -> Int64 {
        max(createdAt + Self.milliseconds(maxAge), retryUntil ?? 0)
    }

    public static func milliseconds(_ duration: Duration) -> Int64 {
        let parts = duration.components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }
}

/// What an attempt's answer means for its delivery (pure): a 2xx delivered it, a 410 disables
/// the endpoint, anything else (another status, a transport error, a refused address) is retried
/// on the schedule, no earlier than the answer's `Retry-After`.
public enum WebhookAnswer: Sendable, Equatable {
    case delivered
    case gone
    case retry(retryAfter: Duration?)

    public init(status: Int?, retryAfter: Duration?) {
        switch status {
        case .some(200...299): self = .delivered
        case .some(410): self = .gone
        default: self = .retry(retryAfter: retryAfter)
        }
    }

    /// The delivery's next step after failed attempt number `attempt` of `delivery`, at `now`.
    public func next(for delivery: ClaimedWebhookDelivery, attempt: Int64, now: Int64, schedule: RetrySchedule,
                     unit: Double) -> WebhookAttemptOutcome.Next {
        switch self {
        case .delivered: return .delivered
        case .gone: return .gone
        case .retry(let retryAfter):
            guard let at = schedule.nextAttempt(after: attempt, now: now, createdAt: delivery.createdAt,
                                                retryUntil: delivery.retryUntil, retryAfter: retryAfter, unit: unit) else {
                return .failed(reason: "gave up after \(attempt) attempts: the delivery is older than the maximum age")
            }
            return .retry(at: at)
        }
    }
}
