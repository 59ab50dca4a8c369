import ArgumentParser
import Foundation
import Logging
import Loop
import Server

/// The running server: logging, loop, routes, signals. Later issues add the store and job wiring here.
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
        var router = Router()
        OperationalRoutes(openAPI: OpenAPIDocument.load(configuredPath: configuration.openAPIPath, logger: logger))
            .register(in: &router)
        if configuration.debugRoutes { DebugRoutes(loop: loop).register(in: &router) }

        let server = HTTPServer(loop: loop, router: router, limits: configuration.limits, logger: Logger(label: "packd.http"))
        let bound: ListenAddress
        do {
            bound = try server.start(listeningOn: configuration.listen)
        } catch {
            logger.critical("cannot listen on \(configuration.listen): \(error)")
            throw ExitCode(1)
        }
        logger.notice("listening on \(bound)", metadata: ["database": "\(configuration.databasePath)"])
        if let portFile = configuration.portFile {
            try Data("\(bound.port)\n".utf8).write(to: URL(fileURLWithPath: portFile), options: .atomic)
        }

        var watchers: [SignalWatcher] = []
        let stop: (Int32) -> Void = { signal in
            guard !server.isShuttingDown else { return }
            logger.notice("signal \(signal): shutting down")
            server.shutdown {
                for watcher in watchers { watcher.close() }
                loop.stop()
            }
        }
        watchers.append(try SignalWatcher(loop: loop, signal: SIGTERM, stop))
        watchers.append(try SignalWatcher(loop: loop, signal: SIGINT, stop))
        Self.unblockShutdownSignals()
        loop.run()
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
