import API
import Events
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
        let metrics = PackdMetrics(loop: loop)
        metrics.bootstrapSystem()
        let downloadMetrics = DownloadMetrics(metrics: metrics)
        let store: any PackStore
        let databaseName = configuration.cluster.map { "\($0.url)" } ?? configuration.databasePath
        do {
            // Opens, creating or migrating, the database before anything listens (and in cluster
            // mode joins the cluster's node table).
            store = try PackRunner.openStore(configuration, loop: loop, onCommitOnWriter: { downloadMetrics.committed($0) })
        } catch {
            logger.critical("cannot open the database", metadata: ["database": "\(databaseName)", "error": "\(error)"])
            // The loop never ran, but its inbox handle (and whatever the store registered before
            // failing) is open: an unclosed uv loop and its handles keep each other alive.
            loop.close()
            throw ExitCode(1)
        }
        // From here a failure to start (no listening socket, an unwritable port file) closes what
        // is open, as the shutdown after `run()` does: the writer commits and stops, the handles
        // close, and the process exits with nothing left to hold the database or the loop.
        var started = false
        defer {
            if !started {
                store.close()
                loop.close()
            }
        }
        var router = Router()
        OperationalRoutes(openAPI: OpenAPIDocument.load(configuredPath: configuration.openAPIPath, logger: logger))
            .register(in: &router)
        if configuration.debugRoutes { DebugRoutes(loop: loop).register(in: &router) }
        let apiLogger = Logger(label: "packd.api")
        let fetcher = try Fetcher(loop: loop, configuration: configuration.downloads.fetch)
        // Its curl multi handle is freed by `shutdown`, not by closing the loop's handles.
        defer { if !started { fetcher.shutdown() } }
        // A tile from libcurl to an event stream, by the types it passes: the fetcher's transfer
        // is stored by the store's writer (`ResourceSink`), whose commits reach the scheduler
        // (`CommittedBatchListener`), which tells the publisher what they mean
        // (`PackActivityListener`); the publisher's events reach the streams through its
        // delivery strategy — in cluster mode, where the database numbers every node's events
        // (ids in commit order), by way of the node's `LISTEN` connection (`StoredEventListener`).
        let events = try PackEventPublisher(
            store: store, loop: loop, numbering: configuration.cluster == nil ? .local : .store,
            configuration: configuration.events, metrics: metrics.events,
            transfers: { [unowned fetcher] in PackTransferStatuses.of(fetcher) }, logger: apiLogger)
        let runner = PackRunner.make(configuration, store: store, events: events, loop: loop, fetcher: fetcher, logger: logger)
        // Scheduled refreshes are claimed through the store (once cluster-wide), published like
        // the engine's transitions and run by the runner's scheduler.
        let refresher = PackRefresher(
            loop: loop, store: store, listener: events, scheduling: runner.scheduling,
            onError: { error in logger.warning("claiming due refreshes failed (retried)", metadata: ["error": "\(error)"]) })
        let api = PackdAPI(
            store: store, loop: loop, events: events, scheduling: runner.scheduling, refreshes: refresher,
            routes: APIRouteBuilder(authenticator: configuration.authenticator, cors: configuration.cors, metrics: metrics),
            logger: apiLogger)
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
            logger.notice("removed scratch files of packd processes that are gone",
                          metadata: ["count": "\(abandoned.count)", "directory": "\(api.sharing.scratchDirectory)"])
        }
        api.register(in: &router)
        if let assets = configuration.dashboard?.load(logger: logger) {
            DashboardRoutes(assets: assets, publicURL: configuration.publicURL).register(in: &router, using: api.routes)
        }
        api.upstream = FetcherUpstream(fetcher: fetcher)
        api.maintenance.updateChecker = PackUpdateChecker(loop: loop, fetcher: fetcher, store: store)
        let webhooks = WebhookSettings.dispatcher(configuration, store: store, fetcher: fetcher, api: api, loop: loop)
        let listening = ListeningAddress()
        ClusterRoutes(source: runner.statusSource(fetcher: fetcher, listen: { listening.text }, clock: api.clock), logger: Logger(label: "packd.api"))
            .register(in: &router, using: api.routes)
        downloadMetrics.connect(fetcher)
        if !configuration.authenticator.isEnabled {
            logger.notice("no API keys configured: every request is allowed (loopback only)")
        }

        let server = HTTPServer(loop: loop, router: router, limits: configuration.limits, logger: Logger(label: "packd.http"))
        let bound: ListenAddress
        do {
            bound = try server.start(listeningOn: configuration.listen)
        } catch {
            logger.critical("cannot listen", metadata: ["listen": "\(configuration.listen)", "error": "\(error)"])
            throw ExitCode(1)
        }
        listening.text = "\(bound)"

        var watchers: [SignalWatcher] = []
        let stop: (Int32) -> Void = { signal in
            guard !server.isShuttingDown else { return }
            logger.notice("shutting down", metadata: ["signal": "\(signal)"])
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
        if let portFile = configuration.portFile {
            try Data("\(bound.port)\n".utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
        }
        // Nothing below can fail: the parts that work on their own start last.
        runner.start(listeningOn: listening.text)
        refresher.start()
        webhooks.start()
        logger.notice("listening on \(bound)", metadata: ["database": "\(databaseName)"])
        Self.unblockShutdownSignals()
        started = true
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
