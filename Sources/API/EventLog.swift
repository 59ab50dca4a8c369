import Logging
import Packs

/// Makes the broadcaster's events durable: each emitted event is appended to the store's event
/// log with the id the broadcaster gave it (which starts after the log's largest id), in the
/// writer's open batch — so logging never cuts a batch short. Ids therefore keep increasing
/// across restarts, and a client's `Last-Event-ID` older than the ring replays from the log.
public enum EventLog {
    /// Installs the broadcaster's `onEmit` hook. Loop thread.
    public static func attach(_ broadcaster: EventBroadcaster, to store: any PackStore, clock: WallClock, logger: Logger) {
        broadcaster.onEmit = { event in
            let stored = StoredEvent(id: event.id, packID: event.packID, type: event.kind.rawValue,
                                     json: String(decoding: event.payload, as: UTF8.self), createdAt: clock.now)
            store.logEvent(stored) { error in
                logger.error("event \(stored.id) was not logged: \(error)")
            }
        }
    }

    /// Stored events as the broadcaster sends them.
    public static func packEvents(_ stored: [StoredEvent]) -> [BroadcastEvent] {
        stored.compactMap { event in
            guard let kind = PackEvent.Kind(rawValue: event.type), let packID = event.packID else { return nil }
            return BroadcastEvent(id: event.id, kind: kind, packID: packID, payload: Array(event.json.utf8))
        }
    }
}
