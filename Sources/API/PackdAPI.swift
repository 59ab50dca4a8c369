import Artifacts
import Events
import Logging
import Loop
import Packs
import Server
import Webhooks

/// The Store-backed API as one unit: the pack, storage, resource and event routes behind the
/// route wrappers, the event publisher whose events are logged durably, and `/metrics`. `packd
/// serve` and the tests build the same thing, so the tests exercise the real wiring.
///
/// Made after the download engine: the engine is given `events` as its `PackActivityListener`,
/// and the API is given the engine as its `PackScheduling`.
public final class PackdAPI {
    public let store: any PackStore
    public let loop: EventLoop
    /// Every time the API stores (creation, state changes, events, preloads); tests inject their own.
    public let clock: WallClock
    /// Where every pack event is published from (the routes' changes and the engine's commits),
    /// with the event streams and the durable log behind them.
    public let events: PackEventPublisher
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

    /// `events` is the publisher made for `store` (and given to the engine); `scheduling` the
    /// engine that runs the downloads, nil for an API that only keeps state; `refreshes` what
    /// runs scheduled refreshes (nil: none run). Loop thread only.
    public init(store: any PackStore, loop: EventLoop, clock: WallClock = .system, events: PackEventPublisher,
                scheduling: (any PackScheduling)?, refreshes: (any RefreshScheduling)? = nil, routes: APIRouteBuilder,
                logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.loop = loop
        self.clock = clock
        self.routes = routes
        self.logger = logger
        self.events = events
        packs = PackRoutes(store: store, events: events, scheduling: scheduling, refreshes: refreshes, clock: clock, logger: logger)
        maintenance = PackMaintenanceRoutes(store: store, packs: packs, logger: logger)
        let webhooks = WebhookRoutes(store: store, urlPolicy: WebhookURLPolicy(), logger: logger)
        self.webhooks = webhooks
        webhookMetrics = WebhookMetrics(registry: routes.metrics.registry)
        // Webhook deliveries commit with the transition or removal that causes them: the
        // dispatcher goes at once rather than at its next poll.
        events.engineTransitionObservers.append { [weak webhooks] transition in
            if !WebhookTrigger.types(of: transition).isEmpty { webhooks?.wake?() }
        }
        events.removalObservers.append { [weak webhooks] _ in webhooks?.wake?() }
    }

    /// An API that makes its own publisher, numbering events on this node: for tests of the
    /// routes, with no download engine or one that reports to nobody. Loop thread only.
    public convenience init(store: any PackStore, loop: EventLoop, clock: WallClock = .system, routes: APIRouteBuilder,
                            scheduling: (any PackScheduling)? = nil, eventConfiguration: EventBroadcaster.Configuration = .init(),
                            logger: Logger = Logger(label: "packd.api")) throws {
        let events = try PackEventPublisher(store: store, loop: loop, configuration: eventConfiguration, metrics: routes.metrics.events,
                                            clock: clock, logger: logger)
        self.init(store: store, loop: loop, clock: clock, events: events, scheduling: scheduling, routes: routes, logger: logger)
    }

    /// The base of the URLs in offline `style.json`/TileJSON (`--public-url`); nil: the request's `Host`.
    public var offlinePublicURL: String?

    public func register(in router: inout Router) {
        packs.register(in: &router, using: routes)
        maintenance.register(in: &router, using: routes)
        webhooks.register(in: &router, using: routes)
        StorageRoutes(store: store, packs: packs, logger: logger).register(in: &router, using: routes)
        ResourceRoutes(store: store, authenticator: routes.authenticator, upstream: upstreamAccess, metrics: routes.metrics,
                       clock: clock, logger: logger)
            .register(in: &router, using: routes)
        EstimateRoutes(store: store, loop: loop, upstream: upstreamAccess, logger: logger).register(in: &router, using: routes)
        EventRoutes(store: store, events: events.streams, logger: logger).register(in: &router, using: routes)
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
                case .failure(let error): logger.warning("counting packs for /metrics failed", metadata: ["error": "\(error)"])
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
        events.removalObservers.append { [weak offline] in offline?.packRemoved($0) }
    }

    /// Ends the event streams (before the server's shutdown grace period runs out).
    public func close() {
        events.close()
    }
}
