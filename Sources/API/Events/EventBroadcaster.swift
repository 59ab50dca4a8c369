import Packs
import Foundation
import CUV
import Loop
import Server

/// Fans pack events out to server-sent-event streams on the loop thread: it numbers them, holds
/// `progress` to ten a second per pack, keeps a short replay ring for `Last-Event-ID`, and gives
/// each subscriber its own bounded queue so one stalled client never holds up a download or
/// another client.
///
/// Ids are assigned here, at the moment an event is emitted, because coalescing delays progress
/// events: an id chosen by the publisher could then go out after a larger one. The server's life
/// starts after `lastEventID` (the Store's durable log restores it across restarts), and `onEmit`
/// lets that log record every emitted event.
///
/// Loop thread only (`publishFromAnyThread` hops there). It is `Sendable` only so it can be
/// captured by work sent to the loop.
public final class EventBroadcaster: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// Minimum milliseconds between two `progress` events of one pack (100 → at most 10/s).
        public var progressInterval: UInt64
        /// Milliseconds between heartbeat comments; 0 turns them off.
        public var heartbeatInterval: UInt64
        /// Events kept for `Last-Event-ID` replay.
        public var replayCapacity: Int
        /// Undelivered events one subscriber may have queued.
        public var subscriberQueueLimit: Int

        /// Who numbers events: this broadcaster (one node), or the store (cluster mode).
        public var numbering: EventNumbering

        public init(progressInterval: UInt64 = 100, heartbeatInterval: UInt64 = 15_000, replayCapacity: Int = 1024, subscriberQueueLimit: Int = 256,
                    numbering: EventNumbering = .local) {
            self.progressInterval = progressInterval
            self.heartbeatInterval = heartbeatInterval
            self.replayCapacity = replayCapacity
            self.subscriberQueueLimit = subscriberQueueLimit
            self.numbering = numbering
        }
    }

    /// Where event ids come from.
    public enum EventNumbering: Sendable {
        /// The broadcaster numbers events as it emits them and delivers them at once (one node:
        /// the store's log only records them).
        case local
        /// The store numbers events when it commits them (cluster mode: ids in commit order across
        /// every node). Emitting only hands an event to `onEmit` (id 0); streams get events when
        /// they come back numbered from the store, every node's alike, through `deliverStored`.
        case store
    }

    /// What a new stream starts with when it has no replay: one `progress` payload per pack.
    public typealias Snapshot = () -> [(packID: Int64, payload: [UInt8])]

    public static let responseHeaders: HTTPHeaders = [
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",
    ]

    public let loop: EventLoop
    public let configuration: Configuration
    /// Called for every emitted event, in id order (the durable log's hook).
    public var onEmit: ((BroadcastEvent) -> Void)?
    /// Called with the new number of subscribers whenever it changes (the metrics gauge's hook).
    public var onSubscriberCountChange: ((Int) -> Void)?

    private let clock: () -> UInt64
    private var ring: EventReplayRing
    private var coalescer: ProgressCoalescer
    private var flushTimer: LoopTimer?
    private var flushDue: UInt64?
    private var heartbeatTimer: LoopTimer?
    private var packSubscribers: [Int64: [ObjectIdentifier: EventSubscriber]] = [:]
    private var allPackSubscribers: [ObjectIdentifier: EventSubscriber] = [:]
    public private(set) var subscriberCount = 0
    /// Progress events dropped for slow subscribers, summed over all of them.
    public private(set) var droppedProgressCount = 0

    /// Loop thread only. `lastEventID` is the largest id handed out before (0 for a new database).
    public convenience init(loop: EventLoop, lastEventID: Int64 = 0, configuration: Configuration = Configuration()) {
        self.init(loop: loop, lastEventID: lastEventID, configuration: configuration, clock: { uv_hrtime() / 1_000_000 })
    }

    init(loop: EventLoop, lastEventID: Int64, configuration: Configuration, clock: @escaping () -> UInt64) {
        self.loop = loop
        self.configuration = configuration
        self.clock = clock
        ring = EventReplayRing(capacity: configuration.replayCapacity, lastID: max(0, lastEventID))
        coalescer = ProgressCoalescer(interval: configuration.progressInterval)
        let flushTimer = LoopTimer(loop: loop)
        flushTimer.unref()
        self.flushTimer = flushTimer
        if configuration.heartbeatInterval > 0 {
            let timer = LoopTimer(loop: loop)
            timer.unref()
            heartbeatTimer = timer
            let interval = configuration.heartbeatInterval
            timer.start(after: interval, repeat: interval) { [weak self] in self?.sendHeartbeats() }
        }
    }

    /// The id of the newest emitted event.
    public var lastEventID: Int64 { ring.lastID }

    /// Publishes an event for `packID`; `payload` is one JSON document. `progress` may be held
    /// back and replaced by a newer one (coalescing); every other kind goes out at once, after any
    /// progress held for the same pack.
    public func publish(_ kind: PackEvent.Kind, packID: Int64, payload: [UInt8]) {
        let now = clock()
        if kind == .progress {
            if let released = coalescer.offer(packID: packID, payload: payload, now: now) {
                emit(.progress, packID: packID, payload: released)
            } else {
                scheduleFlush(now: now)
            }
            return
        }
        if let held = coalescer.takePending(packID: packID, now: now) {
            emit(.progress, packID: packID, payload: held)
        }
        if kind == .packRemoved { coalescer.forget(packID: packID) }
        emit(kind, packID: packID, payload: payload)
    }

    /// `publish` from any thread; the event is emitted on the loop thread soon after.
    /// Publishes a wire event (encoded once, here, with sorted keys). Loop thread only.
    public func publish(_ event: PackEvent) {
        publish(event.kind, packID: event.packID, payload: JSONBody.encode(event.payload))
    }

    public func publishFromAnyThread(_ kind: PackEvent.Kind, packID: Int64, payload: [UInt8]) {
        loop.execute { [self] in publish(kind, packID: packID, payload: payload) }
    }

    /// Starts an event stream on `responder` for `filter`.
    ///
    /// With a `lastEventID` the ring still covers, the stream starts with the missed events;
    /// otherwise with `snapshot()`'s payloads as `progress` events carrying the current
    /// `lastEventID` (so a reconnect from there misses nothing). The all-packs endpoint passes a
    /// snapshot that is empty when the client sent no `Last-Event-ID`.
    ///
    /// `stored` are events read from the durable log (older than the ring holds), written first;
    /// `lastEventID` is then the id of the last of them.
    public func subscribe(_ filter: EventFilter, responder: APIResponder, lastEventID: Int64?, stored: [BroadcastEvent] = [],
                          snapshot: Snapshot) {
        let stream = responder.stream(status: .ok, headers: Self.responseHeaders)
        // HEAD gets the head only; a stream with no body to send would otherwise never end.
        if responder.responder.method == .head { stream.finish() }
        guard stream.isOpen else { return }
        let subscriber = EventSubscriber(filter: filter, stream: stream, queueLimit: configuration.subscriberQueueLimit)
        var initial: [UInt8] = []
        for event in stored where filter.accepts(event) { initial.append(contentsOf: event.frame) }
        if let lastEventID, let missed = ring.events(after: lastEventID, matching: filter) {
            for event in missed { initial.append(contentsOf: event.frame) }
        } else if let lastEventID, isStoreNumbered, lastEventID > ring.lastID {
            // The client (or the store's log, replayed above) is ahead of what this node has
            // delivered: the events up to its id are on their way here and must not be sent again.
            subscriber.floor = lastEventID
        } else {
            for entry in snapshot() where filter.accepts(packID: entry.packID) {
                initial.append(contentsOf: BroadcastEvent(id: ring.lastID, kind: .progress, packID: entry.packID, payload: entry.payload).frame)
            }
        }
        // A comment first, so the client sees the stream open even when nothing is to replay.
        subscriber.writeInitial(Array(":ok\n\n".utf8) + initial)
        let key = ObjectIdentifier(subscriber)
        switch filter {
        case .pack(let packID): packSubscribers[packID, default: [:]][key] = subscriber
        case .allPacks: allPackSubscribers[key] = subscriber
        }
        subscriberCount += 1
        onSubscriberCountChange?(subscriberCount)
        stream.onWritable = { [weak self, weak subscriber] in
            guard let subscriber else { return }
            subscriber.drain()
            self?.endIfDone(subscriber)
        }
        stream.onClose = { [weak self, weak subscriber] in
            guard let self, let subscriber else { return }
            remove(subscriber)
        }
    }

    /// Whether a stream resuming after `id` can be served from the ring alone.
    public func canReplay(after id: Int64) -> Bool {
        ring.events(after: id, matching: .allPacks) != nil
    }

    /// The request's `Last-Event-ID` (header, as `EventSource` sends it), or nil without one.
    /// openapi.yaml allows 1 to 19 digits; anything else, or a value beyond Int64, is a 400.
    public static func lastEventID(of request: HTTPRequest) throws(Problem) -> Int64? {
        guard let value = request.headers["Last-Event-ID"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        guard (1...19).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let id = Int64(value) else {
            throw Problem(.malformedRequest, detail: "Last-Event-ID must be an event id (1 to 19 digits)")
        }
        return id
    }

    /// Ends every stream and stops the timers (server shutdown).
    public func close() {
        for subscriber in allSubscribers() {
            subscriber.stream.finish()
            remove(subscriber)
        }
        flushTimer?.close()
        flushTimer = nil
        heartbeatTimer?.close()
        heartbeatTimer = nil
    }

    // MARK: - Internals

    private func emit(_ kind: PackEvent.Kind, packID: Int64, payload: [UInt8]) {
        if configuration.numbering == .store {
            onEmit?(BroadcastEvent(id: 0, kind: kind, packID: packID, payload: payload))
            return
        }
        // Ids come from the server's own counter, never from input; saturate rather than trap.
        let id = ring.lastID == Int64.max ? Int64.max : ring.lastID + 1
        let event = BroadcastEvent(id: id, kind: kind, packID: packID, payload: payload)
        onEmit?(event)
        fanOut(event)
    }

    /// Events the store numbered (cluster mode: any node's), in id order; those this broadcaster
    /// already delivered are skipped. Loop thread.
    public func deliverStored(_ events: [BroadcastEvent]) {
        for event in events.sorted(by: { $0.id < $1.id }) where event.id > ring.lastID {
            fanOut(event)
        }
    }

    /// Whether the store numbers events (`EventNumbering.store`).
    public var isStoreNumbered: Bool { configuration.numbering == .store }

    /// Keeps `event` for replay and writes it to every subscriber that wants it.
    private func fanOut(_ event: BroadcastEvent) {
        let (kind, packID) = (event.kind, event.packID)
        ring.append(event)
        let frame = event.frame
        var overflowed: [EventSubscriber] = []
        for subscriber in allPackSubscribers.values where subscriber.deliver(event, frame: frame) == .overflow {
            overflowed.append(subscriber)
        }
        if let subscribers = packSubscribers[packID] {
            for subscriber in subscribers.values where subscriber.deliver(event, frame: frame) == .overflow {
                overflowed.append(subscriber)
            }
        }
        for subscriber in overflowed {
            subscriber.stream.finish()
            remove(subscriber)
        }
        // A removed pack's own streams have nothing more to say: they end after `pack_removed`.
        if kind == .packRemoved, let subscribers = packSubscribers[packID] {
            for subscriber in subscribers.values {
                subscriber.endsWhenDrained = true
                endIfDone(subscriber)
            }
        }
    }

    private func endIfDone(_ subscriber: EventSubscriber) {
        guard subscriber.isDone else { return }
        subscriber.stream.finish()
        remove(subscriber)
    }

    /// Emits held progress whose interval has ended. The flush timer calls it; tests too.
    func flushDueProgress() {
        flushDue = nil
        let now = clock()
        for (packID, payload) in coalescer.takeDue(now: now) {
            emit(.progress, packID: packID, payload: payload)
        }
        scheduleFlush(now: now)
    }

    private func scheduleFlush(now: UInt64) {
        guard let delay = coalescer.delayUntilNextDue(now: now), let flushTimer else { return }
        let due = now + delay
        if let flushDue, flushDue <= due { return }
        flushDue = due
        flushTimer.start(after: delay) { [weak self] in self?.flushDueProgress() }
    }

    private func sendHeartbeats() {
        for subscriber in allSubscribers() { subscriber.heartbeat() }
    }

    private func allSubscribers() -> [EventSubscriber] {
        Array(allPackSubscribers.values) + packSubscribers.values.flatMap(\.values)
    }

    private func remove(_ subscriber: EventSubscriber) {
        let key = ObjectIdentifier(subscriber)
        let removed: EventSubscriber?
        switch subscriber.filter {
        case .pack(let packID):
            removed = packSubscribers[packID]?.removeValue(forKey: key)
            if packSubscribers[packID]?.isEmpty == true { packSubscribers[packID] = nil }
        case .allPacks:
            removed = allPackSubscribers.removeValue(forKey: key)
        }
        guard removed != nil else { return }
        droppedProgressCount += subscriber.droppedProgress
        subscriber.stream.onWritable = nil
        subscriber.stream.onClose = nil
        subscriber.releaseQueue()
        subscriberCount -= 1
        onSubscriberCountChange?(subscriberCount)
    }
}
