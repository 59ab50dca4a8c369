/// The five deadlines of one connection — a request head, a request body, write progress, idleness
/// and the lingering close — as a pure value. The connection reports what happened and when;
/// `check` says which deadline has passed (to act on) or when the next one falls, and `arm` whether
/// the connection's one timer must be started earlier. Times are `uv_now` milliseconds.
///
/// Deadlines move all the time (every body chunk, every write), so the timer is only restarted
/// when one moves earlier; when it fires, `check` works out what is really due. Handlers' own
/// deadlines live on their responders (one per request) and come in as `handlerDeadline`.
struct ConnectionDeadlines: Equatable {
    /// A deadline that passed, in the order they are checked.
    enum Expiry: Equatable {
        /// Bytes handed to the socket made no progress for the write timeout: the client stopped reading.
        case writeStalled
        /// A request body stopped arriving for the body timeout.
        case body
        /// A request head did not complete within the header timeout.
        case head
        /// Nothing was asked for the idle timeout.
        case idle
        /// The lingering close is over.
        case linger
    }

    /// What the connection is doing, as far as its deadlines are concerned.
    struct Activity: Equatable {
        /// Our side is shut down; input is read and discarded until the linger deadline.
        var lingering = false
        /// Bytes are queued on the socket.
        var writing = false
        /// A request's body is still arriving.
        var receivingBody = false
        /// Its consumer asked to wait: the body's clock stands still.
        var bodyPaused = false
        /// A request head has begun and is not complete (and will be read).
        var readingHead = false
        /// No request in flight, nothing queued, no shutdown under way.
        var idle = false
    }

    enum Check: Equatable {
        case expired(Expiry)
        /// Nothing has passed; the earliest deadline still ahead, nil when there is none.
        case next(UInt64?)
    }

    let headTimeout: UInt64
    let bodyTimeout: UInt64
    let writeTimeout: UInt64
    let idleTimeout: UInt64
    let lingerTimeout: UInt64

    private(set) var headStartedAt: UInt64 = 0
    private(set) var lastBodyAt: UInt64 = 0
    private(set) var lastWriteAt: UInt64 = 0
    private(set) var idleSince: UInt64 = 0
    private(set) var lingerUntil: UInt64 = 0
    /// When the timer is set to fire; 0 while it is not running.
    private(set) var timerDue: UInt64 = 0

    init(limits: ServerLimits) {
        headTimeout = limits.headerTimeout.milliseconds
        bodyTimeout = limits.bodyTimeout.milliseconds
        writeTimeout = limits.writeTimeout.milliseconds
        idleTimeout = limits.idleTimeout.milliseconds
        lingerTimeout = limits.lingerTimeout.milliseconds
    }

    // MARK: what happened (each returns the deadline it sets, for `arm`)

    @discardableResult
    mutating func headBegan(at now: UInt64) -> UInt64 {
        headStartedAt = now
        return Self.after(now, headTimeout)
    }

    @discardableResult
    mutating func bodyProgressed(at now: UInt64) -> UInt64 {
        lastBodyAt = now
        return Self.after(now, bodyTimeout)
    }

    @discardableResult
    mutating func wrote(at now: UInt64) -> UInt64 {
        lastWriteAt = now
        return Self.after(now, writeTimeout)
    }

    @discardableResult
    mutating func becameIdle(at now: UInt64) -> UInt64 {
        idleSince = now
        return Self.after(now, idleTimeout)
    }

    @discardableResult
    mutating func beganLingering(at now: UInt64) -> UInt64 {
        lingerUntil = Self.after(now, lingerTimeout)
        return lingerUntil
    }

    // MARK: the timer

    /// Whether the timer must be started to fire at `due`: when it is not running or set later.
    mutating func arm(_ due: UInt64) -> Bool {
        guard timerDue == 0 || due < timerDue else { return false }
        timerDue = due
        return true
    }

    /// The timer fired (or was stopped): nothing is armed any more.
    mutating func timerFired() {
        timerDue = 0
    }

    /// The deadline of `activity` that has passed at `now`, else the earliest still ahead. One
    /// expiry at a time: the connection acts on it (which changes its activity) and asks again.
    func check(_ activity: Activity, handlerDeadline: UInt64?, now: UInt64) -> Check {
        if activity.lingering {
            return now >= lingerUntil ? .expired(.linger) : .next(lingerUntil)
        }
        var next = handlerDeadline ?? .max
        if activity.writing {
            let due = Self.after(lastWriteAt, writeTimeout)
            if now >= due { return .expired(.writeStalled) }
            next = min(next, due)
        }
        if activity.receivingBody {
            if !activity.bodyPaused {
                let due = Self.after(lastBodyAt, bodyTimeout)
                if now >= due { return .expired(.body) }
                next = min(next, due)
            }
        } else if activity.readingHead {
            let due = Self.after(headStartedAt, headTimeout)
            if now >= due { return .expired(.head) }
            next = min(next, due)
        } else if activity.idle {
            let due = Self.after(idleSince, idleTimeout)
            if now >= due { return .expired(.idle) }
            next = min(next, due)
        }
        return .next(next == .max ? nil : next)
    }

    /// `start + timeout`, saturating: a timeout too large for the clock never comes.
    static func after(_ start: UInt64, _ timeout: UInt64) -> UInt64 {
        let (sum, overflow) = start.addingReportingOverflow(timeout)
        return overflow ? .max - 1 : sum
    }
}
