/// The transfers waiting for one upstream host, and what currently holds them back: the
/// per-host concurrency limit, the optional request rate, and a pause a caller asked for after a
/// 429/503.
struct HostQueue {
    /// Transfer ids in submission order; ids cancelled while waiting are skipped when reached.
    private var waiting: [UInt64] = []
    private var head = 0
    var active = 0
    var pausedUntil: ContinuousClock.Instant?
    var bucket: TokenBucket?

    var hasWaiting: Bool { head < waiting.count }

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

    /// Nothing waiting, running or remembered: the entry can go.
    func isIdle(now: ContinuousClock.Instant) -> Bool {
        !hasWaiting && active == 0 && (pausedUntil.map { $0 <= now } ?? true)
    }
}
