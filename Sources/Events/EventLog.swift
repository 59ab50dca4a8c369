import Logging
import Loop
import Packs

/// Makes the broadcaster's events durable: each emitted event is appended to the store's event
/// log (by the delivery strategy) with the id it was given (which starts after the log's largest
/// id), or none for the store to number, in the writer's open batch — so logging never cuts a
/// batch short. Ids therefore keep increasing
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

    /// Appends to `store`'s log; the event delivery strategies call `append`. Loop thread.
    init(store: any PackStore, loop: EventLoop, clock: WallClock, logger: Logger) {
        self.store = store
        self.loop = loop
        self.clock = clock
        self.logger = logger
    }

    /// Events waiting to be appended again.
    public var backlogCount: Int { backlog.count }

    /// Appends `event` under its id (0: the store numbers it, cluster mode), stamped now.
    func append(_ event: BroadcastEvent) {
        append(StoredEvent(id: event.id, packID: event.packID, type: event.kind.rawValue,
                           json: String(decoding: event.payload, as: UTF8.self), createdAt: clock.now))
    }

    private func append(_ event: StoredEvent) {
        let log = LoopBound(self, loop: loop)
        let loop = loop
        store.logEvent(event) { error in
            loop.execute { log.value.refused(event, error) }
        }
    }

    private func refused(_ event: StoredEvent, _ error: any Error) {
        guard !closed else {
            return logger.error("an event was not logged (shutting down)", metadata: ["event_id": "\(event.id)", "error": "\(error)"])
        }
        // Refusals come back in id order, so nearly all belong at the end: no scan of 10,000.
        if let last = backlog.last, last.id > event.id {
            backlog.insert(event, at: backlog.firstIndex { $0.id > event.id } ?? backlog.endIndex)
        } else {
            backlog.append(event)
        }
        if backlog.count > Self.maximumBacklog {
            let dropped = backlog.removeFirst()
            logger.error("an event was not logged: the backlog waiting for the store is full", metadata: [
                "event_id": "\(dropped.id)", "backlog": "\(Self.maximumBacklog)",
            ])
        }
        if backlog.count == 1 {
            logger.warning("an event was not logged, retrying until it is", metadata: ["event_id": "\(event.id)", "error": "\(error)"])
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
        let log = LoopBound(self, loop: loop)
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
        for event in backlog { logger.error("an event was not logged before shutdown", metadata: ["event_id": "\(event.id)"]) }
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
