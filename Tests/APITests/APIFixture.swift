import Foundation
import Glibc
import Logging
import Loop
import Server

/// A server on its own loop thread at an ephemeral 127.0.0.1 port, with routes built on the loop
/// thread so they can capture loop-owned objects (an `EventBroadcaster`).
final class APIFixture: @unchecked Sendable {
    let thread: LoopThread
    let server: HTTPServer
    let port: Int

    init(limits: ServerLimits = ServerLimits(), routes: @escaping (inout Router, EventLoop) -> Void) throws {
        let thread = try LoopThread()
        let loop = thread.loop
        nonisolated(unsafe) let build = routes
        let started = try thread.sync { () -> (HTTPServer, Int) in
            var router = Router()
            build(&router, loop)
            let logger = Logger(label: "api-test") { _ in SwiftLogNoOpLogHandler() }
            let server = HTTPServer(loop: loop, router: router, limits: limits, logger: logger)
            return (server, try server.start(listeningOn: ListenAddress(parsing: "127.0.0.1:0")).port)
        }
        self.thread = thread
        server = started.0
        port = started.1
    }

    /// Runs `work` on the loop thread and returns its result.
    func onLoop<T>(_ work: @escaping () -> T) -> T {
        nonisolated(unsafe) let body = work
        nonisolated(unsafe) var result: T?
        _ = try? thread.sync { result = body() }
        return result!
    }

    func stop() {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let server = server
        thread.loop.execute { server.shutdown(gracePeriod: .milliseconds(200)) { done.signal() } }
        _ = done.wait(timeout: .now() + 30)
        thread.shutdown()
    }
}
