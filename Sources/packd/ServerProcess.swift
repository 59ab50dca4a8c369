import API
import ArgumentParser
import Fetch
import Foundation
import Jobs
import Logging
import Loop
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
        let commits = CommitRelay()
        let metrics = PackdMetrics()
        metrics.bootstrapSystem()
        let downloadMetrics = DownloadMetrics(metrics: metrics)
        let writer: WriterThread
        do {
            // Opens, creating or migrating, the database before anything listens.
            // Progress is published only once committed: the writer's commits reach the scheduler on the loop.
            writer = try WriterThread(path: configuration.databasePath) { outcome in
                downloadMetrics.committed(outcome)
                loop.execute { commits.scheduler?.committed(outcome) }
            }
        } catch {
            logger.critical("cannot open the database \(configuration.databasePath): \(error)")
            throw ExitCode(1)
        }
        var router = Router()
        OperationalRoutes(openAPI: OpenAPIDocument.load(configuredPath: configuration.openAPIPath, logger: logger))
            .register(in: &router)
        if configuration.debugRoutes { DebugRoutes(loop: loop).register(in: &router) }
        let api = try PackdAPI(
            store: StoreAccess(loop: loop, writer: writer, path: configuration.databasePath),
            routes: APIRouteBuilder(authenticator: configuration.authenticator, cors: configuration.cors, metrics: metrics),
            eventConfiguration: configuration.events,
            logger: Logger(label: "packd.api"))
        api.offlinePublicURL = configuration.publicURL
        let abandoned = api.sharing.removeAbandonedScratchFiles()
        if !abandoned.isEmpty {
            logger.notice("removed \(abandoned.count) scratch files of packd processes that are gone",
                          metadata: ["directory": "\(api.sharing.scratchDirectory)"])
        }
        api.register(in: &router)
        let fetcher = try Fetcher(loop: loop, configuration: configuration.downloads.fetch)
        api.upstream = FetcherUpstream(fetcher: fetcher)
        let scheduler = try PackScheduler(loop: loop, fetcher: fetcher, writer: writer,
                                          databasePath: configuration.databasePath,
                                          maxActive: configuration.downloads.maxActivePacks,
                                          settings: configuration.downloads.settings)
        DownloadEvents(api: api).connect(scheduler, updates: try PackUpdateChecker(
            loop: loop, fetcher: fetcher, databasePath: configuration.databasePath))
        downloadMetrics.connect(fetcher, scheduler)
        commits.scheduler = scheduler
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
        scheduler.onResumeListingFailed = { error, attempt in
            logger.error("listing the packs to continue failed (attempt \(attempt), retrying): \(error)")
        }
        scheduler.start()
        logger.notice("listening on \(bound)", metadata: ["database": "\(configuration.databasePath)"])
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
                scheduler.shutdown()
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
        writer.stop()
        // The writer's commit callback holds the relay, the relay the scheduler, the scheduler the
        // writer: a cycle that would keep the whole object graph alive past shutdown.
        commits.scheduler = nil
        loop.close()
        logger.notice("stopped")
    }
}

/// Lets the writer's commit callback, created before the scheduler, reach it. Loop thread only.
private final class CommitRelay: @unchecked Sendable {
    var scheduler: PackScheduler?
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
