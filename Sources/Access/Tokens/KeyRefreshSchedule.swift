/// When packd may fetch the issuer's keys: never two fetches at once, and at most one per
/// `minimumInterval` seconds however many tokens name an unknown `kid` — a flood of forged `kid`s
/// costs the issuer one request per interval. Keys older than `maximumAge` are fetched again on
/// the next token. A pure value; times are seconds on a monotonic clock.
struct KeyRefreshSchedule: Sendable, Equatable {
    let minimumInterval: Double
    let maximumAge: Double
    private(set) var inFlight = false
    private(set) var lastStarted: Double?
    private(set) var loadedAt: Double?

    init(minimumInterval: Double, maximumAge: Double) {
        self.minimumInterval = minimumInterval
        self.maximumAge = maximumAge
    }

    /// Whether a fetch may start at `now`.
    func mayStart(now: Double) -> Bool {
        !inFlight && (lastStarted.map { now - $0 >= minimumInterval } ?? true)
    }

    /// Whether the keys held are old enough (or missing) to be fetched again.
    func isStale(now: Double) -> Bool {
        loadedAt.map { now - $0 >= maximumAge } ?? true
    }

    mutating func started(now: Double) {
        inFlight = true
        lastStarted = now
    }

    mutating func finished(loaded: Bool, now: Double) {
        inFlight = false
        if loaded { loadedAt = now }
    }
}
