import Foundation
import Loop
import Packs

/// Runs scheduled refreshes (`"refresh": {"every": …}`): wakes when the earliest one is due (and
/// at least every `pollInterval`, for schedules another node set), claims every due refresh
/// through the store — which moves its due time to the next, jittered (`RefreshSchedule`), and
/// applies `invalidate` to a complete pack, in one transaction — and queues each claimed pack
/// with the scheduler, which revalidates it within `--max-active-packs` and the upstream rules
/// like any `invalidate`. A pack that is not complete when due (downloading, suspended, failed)
/// skips that round. In cluster mode every node runs one: a claim succeeds on exactly one node,
/// the one whose store moved the due time first. Loop thread only.
public final class PackRefresher: RefreshScheduling {
    /// Hears the committed `invalidate` transitions (the API's `state` events). Weak.
    public private(set) weak var listener: (any PackActivityListener)?
    /// Told to run each claimed pack. Weak.
    public private(set) weak var scheduling: (any PackScheduling)?
    /// A pass failed (it is tried again after a second, or on the next wake-up).
    private let onError: ((any Error) -> Void)?
    /// Packs whose refresh this process claimed (tests and the log count them).
    public private(set) var claimed: [Int64] = []

    /// Due refreshes claimed per pass; a pass that finds this many runs again at once.
    static let passLimit = 64

    private let loop: EventLoop
    private let store: any PackStore
    private let clock: WallClock
    private let pollInterval: Duration
    private let timer: LoopTimer
    private var passing = false
    private var passAgain = false
    private var stopped = false

    public init(loop: EventLoop, store: any PackStore, clock: WallClock = .system, pollInterval: Duration = .seconds(30),
                listener: (any PackActivityListener)?, scheduling: (any PackScheduling)?,
                onError: ((any Error) -> Void)? = nil) {
        self.loop = loop
        self.store = store
        self.listener = listener
        self.scheduling = scheduling
        self.onError = onError
        self.clock = clock
        self.pollInterval = pollInterval
        timer = LoopTimer(loop: loop)
    }

    public func start() { pass() }

    public func rescheduled() { pass() }

    public func shutdown() {
        stopped = true
        timer.close()
    }

    private func pass() {
        guard !stopped else { return }
        if passing {
            passAgain = true
            return
        }
        passing = true
        timer.stop()
        let now = clock.now
        store.read({ reader in try reader.dueRefreshes(now: now, limit: Self.passLimit) }) { [weak self] result in
            guard let self, !stopped else { return }
            switch result {
            case .failure(let error): finish(failed: error)
            case .success(let due): claim(due, now: now)
            }
        }
    }

    private func claim(_ due: [DueRefresh], now: Int64) {
        guard !due.isEmpty else { return finish(failed: nil) }
        // A stored interval that no longer parses (edited by hand) is put off a day, not retried hot.
        // A loop, not `map`: the generator is an empty struct, and an inout access to one captured
        // by a closure crashes ThreadSanitizer's runtime (SEGV in `ExternalAccess`, `make sanitize`).
        var random = SystemRandomNumberGenerator()
        var scheduled: [(DueRefresh, RefreshSchedule?, Int64)] = []
        scheduled.reserveCapacity(due.count)
        for refresh in due {
            let schedule = try? RefreshSchedule(every: refresh.every)
            scheduled.append((refresh, schedule, schedule?.next(after: now, random: &random) ?? now + 86_400))
        }
        let claims = scheduled
        let owned = LoopBound(self, loop: loop)
        store.write({ database -> [(Int64, TransitionOutcome?)] in
            try claims.map { refresh, schedule, next in
                guard schedule != nil else {
                    try database.setRefresh(refresh.packID, every: refresh.every, next: next, now: now)
                    return (refresh.packID, nil)
                }
                return (refresh.packID, try database.claimRefresh(refresh.packID, due: refresh.due, next: next, now: now))
            }
        }) { result in
            let refresher = owned.value
            guard !refresher.stopped else { return }
            switch result {
            case .failure(let error):
                refresher.finish(failed: error)
            case .success(let outcomes):
                for case let (packID, .applied(transition)?) in outcomes {
                    refresher.claimed.append(packID)
                    refresher.listener?.packTransitioned(packID, transition)
                    if transition.loopActions.contains(.enqueue) { refresher.scheduling?.packQueued(packID) }
                }
                if due.count == Self.passLimit { refresher.passAgain = true }
                refresher.finish(failed: nil)
            }
        }
    }

    private func finish(failed error: (any Error)?) {
        passing = false
        if let error { onError?(error) }
        if passAgain, error == nil {
            passAgain = false
            return pass()
        }
        passAgain = false
        arm(after: error == nil ? nil : .seconds(1))
    }

    /// Sleeps until the earliest due refresh (at most `pollInterval`; at least `floor`).
    private func arm(after floor: Duration?) {
        store.read({ reader in try reader.earliestRefresh() }) { [weak self] result in
            guard let self, !stopped, !passing else { return }
            var delay = pollInterval
            if case .success(let earliest?) = result {
                delay = min(delay, .seconds(max(0, earliest - clock.now)))
            }
            if let floor { delay = max(delay, floor) }
            timer.start(after: LoopTimer.milliseconds(max(delay, .milliseconds(10)))) { [weak self] in self?.pass() }
        }
    }
}
