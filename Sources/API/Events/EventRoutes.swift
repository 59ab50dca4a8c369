import Logging
import Packs
import Server

/// `GET /v1/events` and `GET /v1/packs/{id}/events`: server-sent events with `Last-Event-ID`
/// resumption — from the broadcaster's ring when it still holds the events, else from the
/// durable log, else (events already trimmed) a `progress` snapshot.
public struct EventRoutes {
    public let store: any PackStore
    public let events: EventBroadcaster
    let logger: Logger
    /// At most this many logged events are replayed; a client further behind gets a snapshot.
    static let maximumStoredReplay = 1000
    /// Packs in an all-packs snapshot.
    static let maximumSnapshotPacks = 500

    public init(store: any PackStore, events: EventBroadcaster, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.events = events
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.get, "/v1/events", role: .read, allowsQueryToken: true, to: &router) { request, responder in
            subscribe(request, responder, packID: nil)
        }
        routes.add(.get, "/v1/packs/{id}/events", role: .read, allowsQueryToken: true, to: &router) { request, responder in
            guard let packID = PackRoutes.packID(request, responder) else { return }
            subscribe(request, responder, packID: packID)
        }
    }

    /// What the pool read for a new stream.
    private struct Start: Sendable {
        var packExists = true
        var stored: [BroadcastEvent] = []
        /// The id the ring continues after (the last stored event replayed).
        var resumeAfter: Int64?
        var snapshot: [(packID: Int64, payload: [UInt8])] = []
    }

    private func subscribe(_ request: HTTPRequest, _ responder: APIResponder, packID: Int64?) {
        let lastEventID: Int64?
        do {
            lastEventID = try EventBroadcaster.lastEventID(of: request)
        } catch {
            return responder.respond(error)
        }
        let fromRing = lastEventID.map { events.canReplay(after: $0) } ?? false
        // An id above any this server handed out (another database's, or a log lost with its
        // database) says nothing about what the client missed: it gets a snapshot, not a replay
        // of nothing followed by ids lower than the one it holds.
        let newestID = events.lastEventID
        let storeNumbered = events.isStoreNumbered
        // The all-packs stream without Last-Event-ID starts at the next event; the others start
        // with what the client missed or a snapshot.
        let wantsSnapshot = packID != nil || lastEventID != nil
        store.read({ reader in
            var start = Start()
            if let packID, try reader.pack(packID) == nil {
                start.packExists = false
                return start
            }
            // In cluster mode the store's log is ahead of what this node delivered so far.
            let newest = storeNumbered ? max(newestID, try reader.lastEventID()) : newestID
            if let lastEventID, !fromRing, lastEventID <= newest, let oldest = try reader.oldestEventID(), oldest <= lastEventID + 1 {
                let stored = try reader.events(after: lastEventID, packID: packID, limit: Self.maximumStoredReplay)
                if stored.count < Self.maximumStoredReplay {
                    start.stored = EventLog.packEvents(stored)
                    start.resumeAfter = max(lastEventID, stored.last?.id ?? lastEventID)
                    return start
                }
            }
            if wantsSnapshot {
                let packs = try packID.map { try reader.pack($0).map { [$0] } ?? [] }
                    ?? reader.packs(after: 0, state: nil, nameContains: nil, limit: Self.maximumSnapshotPacks)
                start.snapshot = try packs.map { pack in
                    let progress = try reader.progress(pack.id) ?? StoredProgress()
                    return (pack.id, JSONBody.encode(ProgressEvent(
                        packID: pack.id, state: pack.state, progress: PackDocument.progress(progress, expected: pack.expected))))
                }
            }
            return start
        }) { result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "starting the event stream")
            case .success(let start) where !start.packExists: responder.respond(PackRoutes.notFound(packID ?? 0))
            case .success(let start):
                let filter: EventFilter = packID.map { .pack($0) } ?? .allPacks
                let resumeAfter = start.resumeAfter ?? (fromRing ? lastEventID : nil)
                events.subscribe(filter, responder: responder, lastEventID: resumeAfter, stored: start.stored) { start.snapshot }
            }
        }
    }
}
