import Logging
import Loop
import Packs

/// Makes the broadcaster's events durable: each emitted event is appended to the store's event
/// log with the id the broadcaster gave it (which starts after the log's largest id), in the
/// writer's open batch — so logging never cuts a batch short. Ids therefore keep increasing
/// across restarts, and a client's `Last-Event-ID` older than the ring replays from the log.
///
/// An append the store refuses (a full disk that even the writer's reserve could not take it on)
/// is not dropped, which would leave a gap in every later replay: it waits in `backlog` and is
/// appended again, oldest first, 0.1 s after the refusal and then doubling up to 5 s, until it
/// lands (replays read the log in id order, so a late append lands in its place). At most
/// `maximumBacklog` events wait; past that the oldest are dropped, each logged as an error.
/// Loop thread only.
public final class EventLog {
    public static let maximumBacklog = 10_000

    private let store: any PackStore
    private let loop: EventLoop
    private let clock: WallClock
    private let logger: Logger
    /// Refused events waiting to be appended again, oldest first.
    private var backlog: [StoredEvent] = []
    private var retryTimer: LoopTimer?
    private var retryAttempt = 0
    /// An attempt's appends are in the writer's queue.
    private var retrying = false
    private var closed = false

    init(store: any PackStore, loop: EventLoop, clock: WallClock, logger: Logger) {
        self.store = store
        self.loop = loop
        self.clock = clock
        self.logger = logger
    }

    /// Installs the broadcaster's `onEmit` hook. Loop thread.
    static func attach(_ broadcaster: EventBroadcaster, to store: any PackStore, loop: EventLoop, clock: WallClock,
                       logger: Logger) -> EventLog {
        let log = EventLog(store: store, loop: loop, clock: clock, logger: logger)
        broadcaster.onEmit = { [log] event in
            log.append(StoredEvent(id: event.id, packID: event.packID, type: event.kind.rawValue,
                                   json: String(decoding: event.payload, as: UTF8.self), createdAt: log.clock.now))
        }
        return log
    }

    /// Events waiting to be appended again.
    public var backlogCount: Int { backlog.count }

    func append(_ event: StoredEvent) {
        let log = LoopBound(self)
        let loop = loop
        store.logEvent(event) { error in
            loop.execute { log.value.refused(event, error) }
        }
    }

    private func refused(_ event: StoredEvent, _ error: any Error) {
        guard !closed else {
            return logger.error("event \(event.id) was not logged (shutting down): \(error)")
        }
        let index = backlog.firstIndex { $0.id > event.id } ?? backlog.endIndex
        backlog.insert(event, at: index)
        if backlog.count > Self.maximumBacklog {
            let dropped = backlog.removeFirst()
            logger.error("event \(dropped.id) was not logged: \(Self.maximumBacklog) events wait for the store already")
        }
        if backlog.count == 1 {
            logger.warning("event \(event.id) was not logged, retrying until it is: \(error)")
        }
        scheduleRetry()
    }

    private func scheduleRetry() {
        guard !retrying, retryTimer == nil, !backlog.isEmpty else { return }
        let timer = LoopTimer(loop: loop)
        retryTimer = timer
        retryAttempt += 1
        timer.start(after: UInt64(min(5_000, 100 << min(retryAttempt - 1, 6)))) { [weak self] in
            guard let self else { return }
            retryTimer?.close()
            retryTimer = nil
            retryBacklog()
        }
    }

    /// Appends every waiting event again; those refused again come back through `refused`.
    private func retryBacklog() {
        guard !closed else { return }
        let events = backlog
        backlog.removeAll()
        retrying = true
        for event in events { append(event) }
        let log = LoopBound(self)
        let loop = loop
        store.whenCommitted {
            loop.execute {
                let log = log.value
                log.retrying = false
                if log.backlog.isEmpty {
                    log.retryAttempt = 0
                } else {
                    log.scheduleRetry()
                }
            }
        }
    }

    /// Stops retrying (server shutdown); what still waits is logged as lost.
    func close() {
        closed = true
        retryTimer?.close()
        retryTimer = nil
        for event in backlog { logger.error("event \(event.id) was not logged before shutdown") }
        backlog.removeAll()
    }

    /// Stored events as the broadcaster sends them.
    public static func packEvents(_ stored: [StoredEvent]) -> [BroadcastEvent] {
        stored.compactMap { event in
            guard let kind = PackEvent.Kind(rawValue: event.type), let packID = event.packID else { return nil }
            return BroadcastEvent(id: event.id, kind: kind, packID: packID, payload: Array(event.json.utf8))
        }
    }
}
