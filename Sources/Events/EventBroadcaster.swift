import Loop
import Packs
import Server

/// Fans pack events out to server-sent-event streams on the loop thread: it numbers them, holds
/// `progress` to ten a second per pack, keeps a short replay ring for `Last-Event-ID`, and gives
/// each subscriber its own bounded queue so one stalled client never holds up a download or
/// another client.
///
/// Ids are assigned once an event is released, because coalescing delays progress events: an id
/// chosen by the publisher could then go out after a larger one. The released event goes to the
/// `EventDelivery` strategy, which numbers it (this node, or the store in cluster mode), makes it
/// durable, and hands it back numbered to `fanOut`. The server's life starts after `lastEventID`
/// (the Store's durable log restores it across restarts).
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

        public init(progressInterval: UInt64 = 100, heartbeatInterval: UInt64 = 15_000, replayCapacity: Int = 1024, subscriberQueueLimit: Int = 256) {
            self.progressInterval = progressInterval
            self.heartbeatInterval = heartbeatInterval
            self.replayCapacity = replayCapacity
            self.subscriberQueueLimit = subscriberQueueLimit
        }
    }

    /// What a new stream starts with when it has no replay: one `progress` payload per pack.
    public typealias Snapshot = () -> [(packID: Int64, payload: [UInt8])]

    /// What a new stream is written before its live events, and the id it has then reached.
    public enum StreamStart: Sendable {
        /// Nothing: the next event is the stream's first.
        case live
        /// `stored` (events read from the durable log, possibly none), then what followed `after`
        /// — the id the client holds, or the last of `stored`.
        case resume(after: Int64, stored: [BroadcastEvent])
        /// One `progress` payload per pack describing its state as of event `asOf` (or later),
        /// each framed with id `asOf`, then what followed `asOf`.
        case snapshot([(packID: Int64, payload: [UInt8])], asOf: Int64)
    }

    public let loop: EventLoop
    public let configuration: Configuration
    /// Numbers released events, makes them durable and fans them out (`EventDelivery`).
    private let delivery: any EventDelivery
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
    /// Without a `delivery`, events are numbered here and not made durable.
    public convenience init(loop: EventLoop, lastEventID: Int64 = 0, configuration: Configuration = Configuration(),
                            delivery: (any EventDelivery)? = nil) {
        self.init(loop: loop, lastEventID: lastEventID, configuration: configuration, delivery: delivery,
                  clock: { MonotonicClock.milliseconds })
    }

    init(loop: EventLoop, lastEventID: Int64, configuration: Configuration, delivery: (any EventDelivery)? = nil,
         clock: @escaping () -> UInt64) {
        self.loop = loop
        self.configuration = configuration
        self.delivery = delivery ?? LocalEventDelivery(log: nil)
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

    /// The id of the newest event this node's streams got.
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

    /// Publishes a wire event (encoded once, here, with sorted keys). Loop thread only.
    public func publish(_ event: PackEvent) {
        publish(event.kind, packID: event.packID, payload: event.encodedPayload)
    }

    /// `publish` from any thread; the event is emitted on the loop thread soon after.
    public func publishFromAnyThread(_ kind: PackEvent.Kind, packID: Int64, payload: [UInt8]) {
        loop.execute { [self] in publish(kind, packID: packID, payload: payload) }
    }

    /// Writes `filter`'s events to `stream` (its head already sent): the missed events when the
    /// ring still holds those after `lastEventID`, else `snapshot()`'s payloads as `progress`
    /// events carrying the current `lastEventID` (taken now, so it describes exactly that id).
    public func subscribe(_ filter: EventFilter, stream: ResponseStream, lastEventID: Int64?, snapshot: Snapshot) {
        if let lastEventID, ring.events(after: lastEventID, matching: filter) != nil {
            return subscribe(filter, stream: stream, start: .resume(after: lastEventID, stored: []))
        }
        subscribe(filter, stream: stream, start: .snapshot(snapshot(), asOf: ring.lastID))
    }

    /// Writes `filter`'s events to `stream` (its head already sent), starting with `start`, then
    /// what followed the id it reaches: from the ring, or — an id this node has not delivered yet
    /// (cluster mode: the store numbered it, its `NOTIFY` is on its way) — from the next event
    /// after it. Callers check `canContinue(after:)` first, in the same loop turn. A stream
    /// already finished (a `HEAD`, a closed connection) is left alone.
    public func subscribe(_ filter: EventFilter, stream: ResponseStream, start: StreamStart) {
        guard stream.isOpen else { return }
        let subscriber = EventSubscriber(filter: filter, stream: stream, queueLimit: configuration.subscriberQueueLimit)
        var initial: [UInt8] = []
        let reached: Int64?
        switch start {
        case .live:
            reached = nil
        case .resume(let after, let stored):
            for event in stored where filter.accepts(event) { initial.append(contentsOf: event.frame) }
            reached = after
        case .snapshot(let entries, let asOf):
            for entry in entries where filter.accepts(packID: entry.packID) {
                initial.append(contentsOf: BroadcastEvent(id: asOf, kind: .progress, packID: entry.packID, payload: entry.payload).frame)
            }
            reached = asOf
        }
        if let reached {
            if reached > ring.lastID {
                // Events up to `reached` are on their way here and must not be sent again.
                subscriber.floor = reached
            } else {
                for event in ring.events(after: reached, matching: filter) ?? [] { initial.append(contentsOf: event.frame) }
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

    /// Whether a stream that reached `id` can go on without a gap: the ring holds what followed
    /// it, or `id` is ahead of what this node delivered (store-numbered events on their way).
    public func canContinue(after id: Int64) -> Bool {
        id > ring.lastID || canReplay(after: id)
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
        delivery.emit(kind, packID: packID, payload: payload, to: self)
    }

    /// Events the store numbered (cluster mode: any node's), in id order; those this broadcaster
    /// already delivered are skipped. Loop thread.
    public func deliverStored(_ events: [BroadcastEvent]) {
        for event in events.sorted(by: { $0.id < $1.id }) where event.id > ring.lastID {
            fanOut(event)
        }
    }

    /// Keeps the numbered `event` for replay and writes it to every subscriber that wants it
    /// (the delivery strategies' last step).
    func fanOut(_ event: BroadcastEvent) {
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
