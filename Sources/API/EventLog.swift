import Logging
import Packs
import Store

/// Makes the broadcaster's events durable: each emitted event is appended to `packd_events`
/// through the writer, in emission order, so its row id equals the event id (the broadcaster
/// starts counting at the log's AUTOINCREMENT sequence). Ids therefore keep increasing across
/// restarts, and a client's `Last-Event-ID` older than the ring replays from the log.
public enum EventLog {
    /// The largest event id ever handed out by this database (0 for a new one); deleted rows
    /// keep their ids reserved.
    public static func lastEventID(_ reader: StoreReader) throws -> Int64 {
        try reader.lastEventID()
    }

    /// Installs the broadcaster's `onEmit` hook. Loop thread.
    public static func attach(_ broadcaster: EventBroadcaster, to store: StoreAccess, logger: Logger) {
        broadcaster.onEmit = { event in
            let json = String(decoding: event.payload, as: UTF8.self)
            let now = PackRoutes.now()
            // The event log is no part of a pack document: logging leaves cached packs valid.
            store.writer.perform({ database in
                try database.appendEvent(packID: event.packID, type: event.kind.rawValue, json: json, now: now)
            }, changesPacks: false) { result in
                switch result {
                case .success(let id) where id != event.id:
                    logger.warning("event \(event.id) was logged as \(id); replay after a restart may skip or repeat events")
                case .failure(let error):
                    logger.error("event \(event.id) was not logged: \(error)")
                case .success:
                    break
                }
            }
        }
    }

    /// Stored events as the broadcaster sends them.
    static func packEvents(_ stored: [StoredEvent]) -> [BroadcastEvent] {
        stored.compactMap { event in
            guard let kind = PackEvent.Kind(rawValue: event.type), let packID = event.packID else { return nil }
            return BroadcastEvent(id: event.id, kind: kind, packID: packID, payload: Array(event.json.utf8))
        }
    }
}
