import Foundation
import Logging
import Loop
import PackdTestSupport
@testable import Server

/// An `HTTPServer` on its own loop thread, listening on an ephemeral 127.0.0.1 port.
final class TestServer {
    let thread: LoopThread
    let server: HTTPServer
    let port: Int

    init(limits: ServerLimits = ServerLimits(), log: CapturedLog? = nil, routes: (inout Router, EventLoop) -> Void) throws {
        let thread = try LoopThread()
        var router = Router()
        routes(&router, thread.loop)
        nonisolated(unsafe) let built = router
        let (server, port) = try thread.sync { () -> (HTTPServer, Int) in
            let logger = Logger(label: "test") { _ in
                if let log { return log.handler() }
                return SwiftLogNoOpLogHandler()
            }
            let server = HTTPServer(loop: thread.loop, router: built, limits: limits, logger: logger)
            let address = try server.start(listeningOn: ListenAddress(parsing: "127.0.0.1:0"))
            return (server, address.port)
        }
        self.thread = thread
        self.server = server
        self.port = port
    }

    func client(timeout: Double = 30) throws -> RawClient {
        try RawClient(port: port, timeout: timeout)
    }

    /// Runs `work` on the loop thread and returns its result.
    func onLoop<T>(_ work: @escaping () -> T) -> T {
        (try? thread.sync(work))!
    }

    /// Graceful shutdown, then stops the loop thread.
    func stop() {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let server = server
        thread.loop.execute { server.shutdown(gracePeriod: .seconds(5)) { done.signal() } }
        _ = done.wait(timeout: .now() + 30)
        thread.shutdown()
    }
}


/// A value shared between the loop thread and the test thread.
final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    var current: Value {
        lock.lock()
        defer { lock.unlock() }
        return value
    }

    func update(_ change: (inout Value) -> Void) {
        lock.lock()
        change(&value)
        lock.unlock()
    }
}
