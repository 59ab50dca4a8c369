/// One upstream host: the transfers waiting for it, and what holds them back — its concurrency
/// limit (adaptive or fixed), the optional request rate, and a pause a caller asked for after a
/// 429/503. Outlives its transfers, so what the limiter learnt survives a quiet moment.
struct HostQueue {
    /// `host[:port]` as people write it (the port only when not the scheme's default).
    let name: String
    /// Transfer ids in submission order; ids cancelled while waiting are skipped when reached.
    private var waiting: [UInt64] = []
    private var head = 0
    var active = 0
    var pausedUntil: ContinuousClock.Instant?
    var bucket: TokenBucket?
    var limiter: HostConcurrencyLimiter
    /// The rules' policy for this host so far (the stricter of all that matched its requests).
    var policy = HostPolicy()
    /// The HTTP version the host last answered with (`CURL_HTTP_VERSION_*`), 0 before any answer.
    var httpVersion = 0
    /// When a transfer last started or finished here (which idle hosts to forget first).
    var lastUsed: ContinuousClock.Instant

    init(name: String, limiter: HostConcurrencyLimiter, now: ContinuousClock.Instant) {
        self.name = name
        self.limiter = limiter
        lastUsed = now
    }

    var hasWaiting: Bool { head < waiting.count }

    /// Transfers queued here (cancelled ones not yet skipped included).
    var waitingCount: Int { waiting.count - head }

    mutating func append(_ id: UInt64) { waiting.append(id) }

    /// Puts a redirected transfer ahead of the line: it was already admitted once.
    mutating func prepend(_ id: UInt64) {
        if head > 0 {
            head -= 1
            waiting[head] = id
        } else {
            waiting.insert(id, at: 0)
        }
    }

    mutating func next() -> UInt64? {
        guard head < waiting.count else { return nil }
        let id = waiting[head]
        head += 1
        if head >= 1024, head * 2 >= waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
        return id
    }

    /// How long until this host may start another transfer, or nil if it may now. Consumes a rate
    /// token when it answers nil.
    mutating func admissionDelay(now: ContinuousClock.Instant) -> Duration? {
        if let pausedUntil {
            if pausedUntil > now { return pausedUntil - now }
            self.pausedUntil = nil
        }
        return bucket?.take(now: now)
    }

    /// Nothing waiting, running or paused: the entry may be forgotten when hosts are too many.
    func isIdle(now: ContinuousClock.Instant) -> Bool {
        !hasWaiting && active == 0 && (pausedUntil.map { $0 <= now } ?? true)
    }

    /// What holds the host back now, if anything: a `Retry-After` pause, or a cut of the adaptive
    /// limit for a slow-down (429/503, timeouts, resets) within the last `recentCut`.
    func throttle(now: ContinuousClock.Instant, recentCut: Duration) -> HostThrottle? {
        if let pausedUntil, pausedUntil > now {
            return HostThrottle(host: name, reason: .retryAfter, until: pausedUntil)
        }
        if let cut = limiter.lastCut, now - cut.at < recentCut {
            return HostThrottle(host: name, reason: cut.reason, until: nil)
        }
        return nil
    }
}

/// A host holding a pack back, for its progress: `{host, reason, until?}`.
public struct HostThrottle: Sendable, Equatable {
    /// `host[:port]` of the upstream (the port only when not the scheme's default).
    public var host: String
    public var reason: ThrottleReason
    /// The end of a `Retry-After` pause (loop clock); nil while the limiter is backing off, which
    /// ends when the host answers well again.
    public var until: ContinuousClock.Instant?

    public init(host: String, reason: ThrottleReason, until: ContinuousClock.Instant?) {
        self.host = host
        self.reason = reason
        self.until = until
    }
}

/// What the fetcher knows about one host, for metrics and tests.
public struct HostStatus: Sendable, Equatable {
    public var host: String
    /// Transfers the host may have in flight now.
    public var limit: Int
    public var inFlight: Int
    public var waiting: Int
    public var adaptive: Bool
    /// `CURL_HTTP_VERSION_*` of the last answer, 0 before any.
    public var httpVersion: Int
    /// The mean latency of the limiter's last round, and its baseline.
    public var latency: Duration?
    public var baseline: Duration?
}

/// One finished transfer as its host saw it, for per-host metrics.
public struct HostSample: Sendable {
    public var host: String
    /// The HTTP status, nil when the transfer failed.
    public var status: Int?
    public var error: FetchError?
    /// From request sent to last byte.
    public var latency: Duration
    /// The host's limit after this transfer.
    public var limit: Int
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
