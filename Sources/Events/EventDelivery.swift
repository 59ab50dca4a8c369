import Packs

/// How an event the broadcaster released (progress already coalesced) gets its id, becomes
/// durable and reaches the streams. Two strategies, one per mode; `PackEventPublisher` picks one
/// when it is made (`EventNumbering`). Loop thread only.
public protocol EventDelivery: AnyObject {
    /// Takes one released event of `packID`; the numbered event reaches `streams` through
    /// `EventBroadcaster.fanOut` — now, or once the store numbered it.
    func emit(_ kind: PackEvent.Kind, packID: Int64, payload: [UInt8], to streams: EventBroadcaster)
}

/// Who numbers events: this node (`LocalEventDelivery`) or the store (`StoreNumberedEventDelivery`).
public enum EventNumbering: Sendable {
    case local
    case store
}

/// One node (SQLite mode): the broadcaster's own counter numbers the event, the durable log
/// records it under that id (in the writer's open batch, `EventLog`), and it goes to the streams
/// at once. Ids continue after the largest the log ever held, so they survive restarts.
public final class LocalEventDelivery: EventDelivery {
    /// nil: events are not made durable (a broadcaster on its own, in tests).
    let log: EventLog?

    init(log: EventLog?) {
        self.log = log
    }

    public func emit(_ kind: PackEvent.Kind, packID: Int64, payload: [UInt8], to streams: EventBroadcaster) {
        // Ids come from the server's own counter, never from input; saturate rather than trap.
        let last = streams.lastEventID
        let event = BroadcastEvent(id: last == Int64.max ? Int64.max : last + 1, kind: kind, packID: packID, payload: payload)
        log?.append(event)
        streams.fanOut(event)
    }
}

/// Cluster mode: the event goes to the shared log unnumbered; the store numbers it when it
/// commits (ids in commit order across every node) and `NOTIFY`s every node, whose
/// `ClusterNotifications` reads it back and hands it to its `PackEventPublisher`
/// (`StoredEventListener`), which fans it out — this node's own events included, so every node's
/// streams carry the same events under the same ids.
public final class StoreNumberedEventDelivery: EventDelivery {
    let log: EventLog

    init(log: EventLog) {
        self.log = log
    }

    public func emit(_ kind: PackEvent.Kind, packID: Int64, payload: [UInt8], to streams: EventBroadcaster) {
        log.append(BroadcastEvent(id: 0, kind: kind, packID: packID, payload: payload))
    }
}
