import Events
import Foundation
import Logging
import Packs
import Server

/// `GET /v1/events` and `GET /v1/packs/{id}/events`: server-sent events with `Last-Event-ID`
/// resumption — from the broadcaster's ring when it still holds the events, else from the
/// durable log, else (events already trimmed, or too many) a `progress` snapshot.
///
/// Whatever a stream starts with, it ends at the pack's current state and the newest id: a
/// snapshot is read as of an id taken before it — the newest this node delivered, or the store's
/// newest (cluster mode: other nodes' events may not have reached this node yet) — so it is never
/// older than that id, and the stream goes on with every event after that id: from the ring, or
/// (an id this node has not delivered yet) with the first event after it.
public struct EventRoutes {
    public let store: any PackStore
    public let events: EventBroadcaster
    let logger: Logger
    /// At most this many logged events are replayed; a client further behind gets a snapshot.
    static let maximumStoredReplay = 1000
    /// Packs in an all-packs snapshot.
    static let maximumSnapshotPacks = 500
    /// Reads of a stream's start: another is made when so many events arrived during one that
    /// the ring no longer holds those after the id it reached (more than its capacity, 1,024).
    static let maximumStartReads = 3

    static let responseHeaders: HTTPHeaders = [
        "Content-Type": "text/event-stream",
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",
    ]

    public init(store: any PackStore, events: EventBroadcaster, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.events = events
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.get, "/v1/events", role: .read, allowsQueryToken: true, to: &router) { request, responder in
            subscribe(request, responder, packID: nil)
        }
        routes.pack.add(.get, "/events", role: .read, allowsQueryToken: true, to: &router) { packID, request, responder in
            subscribe(request, responder, packID: packID.rawValue)
        }
    }

    private func subscribe(_ request: HTTPRequest, _ responder: APIResponder, packID: Int64?) {
        let lastEventID: Int64?
        do {
            lastEventID = try Self.lastEventID(of: request)
        } catch {
            return responder.respond(error)
        }
        start(packID: packID, lastEventID: lastEventID, responder, attempt: 1)
    }

    /// Reads how the stream starts (pool thread), then subscribes on the loop — or reads again
    /// when the ring lost what followed the id the read reached.
    private func start(packID: Int64?, lastEventID: Int64?, _ responder: APIResponder, attempt: Int) {
        // Taken before the read: every event up to it describes a commit the read sees.
        let delivered = events.lastEventID
        let fromRing = lastEventID.map { events.canReplay(after: $0) } ?? false
        store.read({ reader in
            try Self.readStart(reader, packID: packID, lastEventID: lastEventID, fromRing: fromRing, delivered: delivered)
        }) { result in
            switch result {
            case .failure(let error):
                responder.respondInternalError(error, logger: logger, "starting the event stream")
            case .success(nil):
                responder.respond(PackRouteGroup.notFound(packID ?? 0))
            case .success(let start?):
                let filter: EventFilter = packID.map { .pack($0) } ?? .allPacks
                if let reached = start.reached, !events.canContinue(after: reached) {
                    guard attempt < Self.maximumStartReads else {
                        return responder.respond(Problem(.unavailable, detail: "events arrive faster than a stream can start; try again"))
                    }
                    return self.start(packID: packID, lastEventID: lastEventID, responder, attempt: attempt + 1)
                }
                events.subscribe(filter, stream: Self.open(responder), start: start)
            }
        }
    }

    /// The stream's head; a `HEAD` gets the head only (a stream with no body to send would
    /// otherwise never end).
    static func open(_ responder: APIResponder) -> ResponseStream {
        let stream = responder.stream(status: .ok, headers: responseHeaders)
        if responder.responder.method == .head { stream.finish() }
        return stream
    }

    /// The request's `Last-Event-ID` (header, as `EventSource` sends it), or nil without one.
    /// openapi.yaml allows 1 to 19 digits; anything else, or a value beyond Int64, is a 400.
    static func lastEventID(of request: HTTPRequest) throws(Problem) -> Int64? {
        guard let value = request.headers["Last-Event-ID"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        guard (1...19).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let id = Int64(value) else {
            throw Problem(.malformedRequest, detail: "Last-Event-ID must be an event id (1 to 19 digits)")
        }
        return id
    }

    /// How a stream starts (nil: no such pack). Pool thread.
    private static func readStart(_ reader: any StoreReading & PackExporting, packID: Int64?, lastEventID: Int64?, fromRing: Bool,
                                  delivered: Int64) throws -> EventBroadcaster.StreamStart? {
        if let packID, try reader.pack(packID) == nil { return nil }
        // Read before the packs: the snapshot below is at least as new as this id. In cluster
        // mode the store's log may be ahead of what this node delivered so far (its `NOTIFY`s
        // behind): the ring then does not hold all there is, the log does.
        let stored = try reader.lastEventID()
        if let lastEventID, fromRing, stored <= delivered { return .resume(after: lastEventID, stored: []) }
        let newest = max(delivered, stored)
        // An id above any this server handed out (another database's, or a log lost with its
        // database) says nothing about what the client missed: it gets a snapshot, not a replay
        // of nothing followed by ids lower than the one it holds.
        if let lastEventID, lastEventID <= newest, let oldest = try reader.oldestEventID(), oldest <= lastEventID + 1 {
            let missed = try reader.events(after: lastEventID, packID: packID, limit: maximumStoredReplay)
            if missed.count < maximumStoredReplay {
                return .resume(after: max(lastEventID, missed.last?.id ?? lastEventID), stored: EventLog.packEvents(missed))
            }
        }
        // The all-packs stream without Last-Event-ID starts at the next event; the others start
        // with what the client missed or a snapshot.
        guard packID != nil || lastEventID != nil else { return .live }
        let packs = try packID.map { try reader.pack($0).map { [$0] } ?? [] }
            ?? reader.packs(after: 0, state: nil, nameContains: nil, limit: maximumSnapshotPacks)
        let snapshot = try packs.map { pack in
            let progress = try reader.progress(pack.id) ?? StoredProgress()
            return (pack.id, JSONBody.encode(ProgressEvent(
                packID: pack.id, state: pack.state, progress: PackProgress(progress, expected: pack.expected))))
        }
        return .snapshot(snapshot, asOf: newest)
    }
}

extension EventBroadcaster.StreamStart {
    /// The id the stream has reached once its start is written (nil: live from the next event).
    var reached: Int64? {
        switch self {
        case .live: nil
        case .resume(let after, _): after
        case .snapshot(_, let asOf): asOf
        }
    }
}
