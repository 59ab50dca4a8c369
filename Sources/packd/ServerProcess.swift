import API
import Artifacts
import ArgumentParser
import Fetch
import Foundation
import Jobs
import Logging
import Loop
import Packs
import Server
import Store

/// The running server: logging, loop, database writer, routes, the download scheduler plugged
/// into `PackdAPI.packs`' hooks, signals.
struct ServerProcess {
    let configuration: ServerConfiguration

    func run() throws {
        SignalWatcher.ignoreSIGPIPE()
        let level = configuration.logLevel
        switch configuration.logFormat {
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = TextLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        case .json:
            LoggingSystem.bootstrap { label in
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
        let logger = Logger(label: "packd")

        let loop = try EventLoop()
        let metrics = PackdMetrics()
        metrics.bootstrapSystem()
        let downloadMetrics = DownloadMetrics(metrics: metrics)
        let store: any PackStore
        let databaseName = configuration.cluster.map { "\($0.url)" } ?? configuration.databasePath
        do {
            // Opens, creating or migrating, the database before anything listens (and in cluster
            // mode joins the cluster's node table).
            store = try PackRunner.openStore(configuration, loop: loop, onCommitOnWriter: { downloadMetrics.committed($0) })
        } catch {
            logger.critical("cannot open the database \(databaseName): \(error)")
            // The loop never ran, but its inbox handle (and whatever the store registered before
            // failing) is open: an unclosed uv loop and its handles keep each other alive.
            loop.close()
            throw ExitCode(1)
        }
        var events = configuration.events
        // In cluster mode the database numbers every node's events (ids in commit order).
        if configuration.cluster != nil { events.numbering = .store }
        var router = Router()
        OperationalRoutes(openAPI: OpenAPIDocument.load(configuredPath: configuration.openAPIPath, logger: logger))
            .register(in: &router)
        if configuration.debugRoutes { DebugRoutes(loop: loop).register(in: &router) }
        let api = try PackdAPI(
            store: store, loop: loop,
            routes: APIRouteBuilder(authenticator: configuration.authenticator, cors: configuration.cors, metrics: metrics),
            eventConfiguration: events,
            logger: Logger(label: "packd.api"))
        api.offlinePublicURL = configuration.publicURL
        api.sharing.artifactsDirectory = configuration.artifactsDirectory
        api.sharing.artifactsMaximumBytes = configuration.artifactsMaximumBytes
        // A build killed mid-way left a temporary file that is never served; remove it.
        let abandonedBuilds = ArtifactDirectory(path: configuration.artifactsDirectory).removeAbandonedBuilds()
        if abandonedBuilds > 0 {
            logger.notice("removed unfinished artifact builds of packd processes that are gone",
                          metadata: ["count": "\(abandonedBuilds)", "directory": "\(configuration.artifactsDirectory)"])
        }
        let abandoned = api.sharing.removeAbandonedScratchFiles()
        if !abandoned.isEmpty {
            logger.notice("removed \(abandoned.count) scratch files of packd processes that are gone",
                          metadata: ["directory": "\(api.sharing.scratchDirectory)"])
        }
        api.register(in: &router)
        if let assets = configuration.dashboard?.load(logger: logger) {
            DashboardRoutes(assets: assets, publicURL: configuration.publicURL).register(in: &router, using: api.routes)
        }
        let fetcher = try Fetcher(loop: loop, configuration: configuration.downloads.fetch)
        api.upstream = FetcherUpstream(fetcher: fetcher)
        api.maintenance.updateChecker = PackUpdateChecker(loop: loop, fetcher: fetcher, store: store)
        // The scheduler and the API know each other through two protocols: the API tells it of
        // state changes (`PackScheduling`), it tells the API what it committed (`PackActivityListener`).
        let runner = PackRunner.make(configuration, store: store, api: api, loop: loop, fetcher: fetcher, logger: logger)
        // Scheduled refreshes are claimed through the store (once cluster-wide) and run by the runner.
        let refresher = PackRefresher(loop: loop, store: store, clock: api.clock)
        refresher.listener = api
        refresher.scheduling = api.packs.scheduling
        refresher.onError = { error in logger.warning("claiming due refreshes failed (retried)", metadata: ["error": "\(error)"]) }
        api.packs.refreshes = refresher
        let webhooks = WebhookSettings.dispatcher(configuration, store: store, fetcher: fetcher, api: api, loop: loop)
        let listening = ListeningAddress()
        ClusterRoutes(source: runner.statusSource(fetcher: fetcher, listen: { listening.text }, clock: api.clock), logger: Logger(label: "packd.api"))
            .register(in: &router, using: api.routes)
        downloadMetrics.connect(fetcher)
        api.showTransfers { [unowned fetcher] in PackTransferStatuses.of(fetcher) }
        if !configuration.authenticator.isEnabled {
            logger.notice("no API keys configured: every request is allowed (loopback only)")
        }

        let server = HTTPServer(loop: loop, router: router, limits: configuration.limits, logger: Logger(label: "packd.http"))
        let bound: ListenAddress
        do {
            bound = try server.start(listeningOn: configuration.listen)
        } catch {
            logger.critical("cannot listen on \(configuration.listen): \(error)")
            throw ExitCode(1)
        }
        listening.text = "\(bound)"
        runner.start(listeningOn: listening.text)
        refresher.start()
        webhooks.start()
        logger.notice("listening on \(bound)", metadata: ["database": "\(databaseName)"])
        if let portFile = configuration.portFile {
            try Data("\(bound.port)\n".utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
        }

        var watchers: [SignalWatcher] = []
        let stop: (Int32) -> Void = { signal in
            guard !server.isShuttingDown else { return }
            logger.notice("signal \(signal): shutting down")
            // Event streams never end by themselves; end them so shutdown need not wait them out.
            api.close()
            server.shutdown {
                // Downloads stop with their packs still `active`/`queued` in the database, so the
                // next start continues them; then nothing is left to call the fetcher.
                refresher.shutdown()
                runner.shutdown()
                webhooks.shutdown()
                fetcher.shutdown()
                for watcher in watchers { watcher.close() }
                loop.stop()
            }
        }
        watchers.append(try SignalWatcher(loop: loop, signal: SIGTERM, stop))
        watchers.append(try SignalWatcher(loop: loop, signal: SIGINT, stop))
        Self.unblockShutdownSignals()
        loop.run()
        // Responses are finished; commit what the writer holds before the loop's handles close.
        store.close()
        runner.finishShutdown()
        loop.close()
        logger.notice("stopped")
    }
}

extension ServerProcess {
    /// A parent may start us with SIGTERM/SIGINT blocked (the mask is inherited across exec;
    /// some process launchers block them), and a blocked signal never reaches the watcher.
    static func unblockShutdownSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }
}

/// The address the server bound, known once it listens (`GET /v1/cluster` in SQLite mode).
final class ListeningAddress {
    var text = ""
}
