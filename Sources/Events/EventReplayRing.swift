/// The most recent events, so a client reconnecting with `Last-Event-ID` after a short break gets
/// exactly what it missed. Bounded: older events fall off and such a client gets a snapshot.
/// The durable log in the Store extends this across restarts later.
struct EventReplayRing {
    private var storage: [BroadcastEvent?]
    private var start = 0
    private(set) var count = 0
    /// The id of the newest event ever appended (even if it fell off since), or the id the
    /// server's life started after.
    private(set) var lastID: Int64

    init(capacity: Int, lastID: Int64) {
        storage = Array(repeating: nil, count: max(1, capacity))
        self.lastID = lastID
    }

    var capacity: Int { storage.count }

    mutating func append(_ event: BroadcastEvent) {
        if count == storage.count {
            storage[start] = event
            start = (start + 1) % storage.count
        } else {
            storage[(start + count) % storage.count] = event
            count += 1
        }
        lastID = event.id
    }

    /// The events after `id` that `filter` accepts, oldest first, or `nil` when some event after
    /// `id` has already fallen off (or `id` is from the future, as after a restart with a lost
    /// log): then the ring cannot tell what the client missed.
    func events(after id: Int64, matching filter: EventFilter) -> [BroadcastEvent]? {
        if id > lastID { return nil }
        if id == lastID { return [] }
        guard count > 0, let oldest = storage[start], id >= oldest.id - 1 else { return nil }
        var result: [BroadcastEvent] = []
        for offset in 0..<count {
            guard let event = storage[(start + offset) % storage.count] else { continue }
            if event.id > id && filter.accepts(event) { result.append(event) }
        }
        return result
    }
}
