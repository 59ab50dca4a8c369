import Artifacts
import Logging
import Loop
import Packs
import Server
import Webhooks

/// The Store-backed API as one unit: the pack, storage, resource and event routes behind the
/// route wrappers, the broadcaster whose events are logged durably, and `/metrics`. `packd
/// serve` and the tests build the same thing, so the tests exercise the real wiring.
public final class PackdAPI {
    public let store: any PackStore
    public let loop: EventLoop
    /// Every time the API stores (creation, state changes, events, preloads); tests inject their own.
    public let clock: WallClock
    public let events: EventBroadcaster
    /// The durable log behind `events` (and its backlog of appends a full disk refused).
    public let eventLog: EventLog
    public let packs: PackRoutes
    public let maintenance: PackMaintenanceRoutes
    /// `/v1/webhooks…`; `packd` gives it the upstream address policy and its dispatcher's wake-up.
    public let webhooks: WebhookRoutes
    public let webhookMetrics: WebhookMetrics
    public let routes: APIRouteBuilder
    /// Scratch directory, upload limit and concurrency of the export and import endpoints.
    public var sharing = SharingSettings()
    /// The artifacts of pack versions, made by `register` from `sharing` (nil before).
    public private(set) var artifacts: ArtifactCache?
    let logger: Logger
    private let upstreamAccess = UpstreamAccess()

    /// How estimates fetch styles and TileJSONs and `GET /v1/resources?fetch=true` fetches a
    /// miss: `packd` sets its fetcher-backed client; nil answers those requests 503. Loop thread.
    public var upstream: (any UpstreamClient)? {
        get { upstreamAccess.client }
        set { upstreamAccess.client = newValue }
    }

    /// Loop thread only (the broadcaster is loop-owned). Event ids continue after the largest one
    /// the database ever handed out.
    public init(store: any PackStore, loop: EventLoop, clock: WallClock = .system, routes: APIRouteBuilder, eventConfiguration: EventBroadcaster.Configuration = .init(),
                logger: Logger = Logger(label: "packd.api")) throws {
        self.store = store
        self.loop = loop
        self.clock = clock
        self.routes = routes
        self.logger = logger
        let lastEventID = try store.readNow { try $0.lastEventID() }
        events = EventBroadcaster(loop: loop, lastEventID: lastEventID, configuration: eventConfiguration)
        eventLog = EventLog.attach(events, to: store, loop: loop, clock: clock, logger: logger)
        let metrics = routes.metrics
        events.onSubscriberCountChange = { metrics.sseSubscribers.set(Int64($0)) }
        packs = PackRoutes(store: store, events: events, clock: clock, logger: logger)
        maintenance = PackMaintenanceRoutes(store: store, packs: packs, logger: logger)
        webhooks = WebhookRoutes(store: store, urlPolicy: WebhookURLPolicy(), logger: logger)
        webhookMetrics = WebhookMetrics(registry: metrics.registry)
    }

    /// The base of the URLs in offline `style.json`/TileJSON (`--public-url`); nil: the request's `Host`.
    public var offlinePublicURL: String?
    private var transferWatch: LoopTimer?

    public func register(in router: inout Router) {
        packs.register(in: &router, using: routes)
        maintenance.register(in: &router, using: routes)
        webhooks.register(in: &router, using: routes)
        StorageRoutes(store: store, packs: packs, logger: logger).register(in: &router, using: routes)
        ResourceRoutes(store: store, authenticator: routes.authenticator, upstream: upstreamAccess, metrics: routes.metrics,
                       clock: clock, logger: logger)
            .register(in: &router, using: routes)
        EstimateRoutes(store: store, loop: loop, upstream: upstreamAccess, logger: logger).register(in: &router, using: routes)
        EventRoutes(store: store, events: events, logger: logger).register(in: &router, using: routes)
        VersionRoutes(store: store, logger: logger).register(in: &router, using: routes)
        let artifacts = ArtifactCache(directory: ArtifactDirectory(path: sharing.resolvedArtifactsDirectory()), loop: loop,
                                      configuration: ArtifactCache.Configuration(maximumBytes: sharing.artifactsMaximumBytes,
                                                                                 concurrentBuilds: sharing.concurrentTransfers))
        artifacts.onBuilt = { [logger] artifact, took in
            logger.info("built artifact", metadata: ["pack_id": "\(artifact.key.pack)", "version": "\(artifact.key.version)",
                                                     "format": "\(artifact.key.format.rawValue)", "bytes": "\(artifact.size)",
                                                     "duration_ms": "\(Int(took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000))"])
        }
        artifacts.onEvicted = { [logger] entry in
            logger.info("evicted artifact", metadata: ["path": "\(entry.path)", "bytes": "\(entry.size)"])
        }
        self.artifacts = artifacts
        SharingRoutes(store: store, loop: loop, packs: packs, settings: sharing, artifacts: artifacts, logger: logger)
            .register(in: &router, using: routes)
        let metrics = routes.metrics
        let store = store
        let logger = logger
        routes.add(.get, "/metrics", role: .read, to: &router) { _, responder in
            // The packs gauge is counted at scrape time: one grouped query, never stale.
            store.read({ reader in try reader.packCountsByState() }) { result in
                switch result {
                case .failure(let error): logger.warning("counting packs for /metrics failed: \(error)")
                case .success(let counts):
                    for state in PackState.allCases { metrics.setPacks(state: state, count: counts[state] ?? 0) }
                }
                responder.respond(HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                                               body: metrics.exposition()))
            }
        }
        let offline = OfflineResourceRoutes(store: store, authenticator: routes.authenticator, publicURL: offlinePublicURL,
                                            logger: logger)
        offline.register(in: &router, using: routes)
        packs.removalObservers.append { [weak offline] in offline?.packRemoved($0) }
        packs.removalObservers.append { [weak webhooks] _ in webhooks?.wake?() }
    }

    /// Ends the event streams (before the server's shutdown grace period runs out).
    public func close() {
        transferWatch?.close()
        transferWatch = nil
        events.close()
        eventLog.close()
    }

    /// How often a change of what holds a pack's transfers back becomes a `progress` event when
    /// nothing commits (a host pausing the pack with `Retry-After`).
    static let transferWatchInterval: UInt64 = 500

    /// Shows what the fetcher does for each pack (`progress.transfers_in_flight`,
    /// `progress.throttled`) in pack documents and `progress` events. Loop thread.
    public func showTransfers(_ statuses: @escaping () -> [Int64: PackTransferStatus]) {
        packs.transferStatuses = statuses
        if transferWatch == nil {
            let timer = LoopTimer(loop: loop)
            timer.unref()
            timer.start(after: Self.transferWatchInterval, repeat: Self.transferWatchInterval) { [weak self] in
                self?.packs.publishTransferChanges()
            }
            transferWatch = timer
        }
    }
}
