import Foundation
import Logging
import Loop
import Server

/// The WAN benchmark's tile server: packd's own HTTP server on a loop thread of its own,
/// answering every `GET /t/{z}/{x}/{file}` with the same tile after `delay` — what a server
/// tens of milliseconds away looks like from a client (nginx in front adds the TLS and HTTP/2).
/// With an `answer` of its own it serves whatever that decides (the PMTiles benchmark's archive
/// and tiles), under the same delay.
///
/// The wait costs no CPU: answers due wait in arrival order (the delay is the same for all) and
/// one timer, armed for the oldest, sends each when its time comes, so thousands can be pending.
final class DelayedTileUpstream: @unchecked Sendable {
    let port: Int
    private let thread: LoopThread
    private let server: HTTPServer
    private let state: State

    /// Loop-thread state: the answers waiting for their time.
    private final class State {
        let delay: Duration
        let answer: @Sendable (HTTPRequest) -> HTTPResponse
        var pending: [(due: ContinuousClock.Instant, responder: Responder, response: HTTPResponse)] = []
        var head = 0
        var answered = 0
        /// The most requests waiting at once since the last `takePeakInFlight`.
        var peak = 0
        /// When the first request since the last `takeSpan` arrived, and the last answer left.
        var firstArrival: ContinuousClock.Instant?
        var lastAnswer: ContinuousClock.Instant?
        var timer: LoopTimer!

        init(delay: Duration, answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
            self.delay = delay
            self.answer = answer
        }

        func enqueue(_ request: HTTPRequest, _ responder: Responder) {
            let now = ContinuousClock.now
            if firstArrival == nil { firstArrival = now }
            pending.append((now + delay, responder, answer(request)))
            peak = max(peak, pending.count - head)
            if pending.count - head == 1 { arm() }
        }

        private func arm() {
            guard head < pending.count else { return }
            timer.start(after: max(.zero, pending[head].due - .now)) { [unowned self] in release() }
        }

        private func release() {
            let now = ContinuousClock.now
            while head < pending.count, pending[head].due <= now {
                pending[head].responder.respond(pending[head].response)
                head += 1
                answered += 1
                lastAnswer = now
            }
            if head > 4096, head * 2 > pending.count {
                pending.removeFirst(head)
                head = 0
            }
            arm()
        }
    }

    convenience init(delay: Duration, tile: [UInt8]) throws {
        try self.init(delay: delay, paths: ["/t/{z}/{x}/{file}"]) { _ in
            HTTPResponse(status: .ok, headers: ["Content-Type": "image/png"], body: tile)
        }
    }

    /// Answers `GET` of each route pattern in `paths` with `answer`'s response, `delay` later.
    init(delay: Duration, paths: [String], answer: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws {
        let thread = try LoopThread(name: "delayed-upstream")
        self.thread = thread
        let state = State(delay: delay, answer: answer)
        self.state = state
        var router = Router()
        for path in paths {
            router.get(path) { request, responder in state.enqueue(request, responder) }
        }
        var limits = ServerLimits()
        limits.maxConnections = 16_384
        var logger = Logger(label: "delayed-upstream")
        logger.logLevel = .warning
        let server = HTTPServer(loop: thread.loop, router: router, limits: limits, logger: logger)
        self.server = server
        port = try thread.sync {
            state.timer = LoopTimer(loop: thread.loop)
            return Int(try server.start(listeningOn: .loopback(port: 0)).port)
        }
    }

    /// Tiles answered so far.
    var answered: Int { (try? thread.sync { self.state.answered }) ?? 0 }

    /// The most requests in flight at once since the last call, which starts a new count.
    func takePeakInFlight() -> Int {
        (try? thread.sync {
            defer { self.state.peak = 0 }
            return self.state.peak
        }) ?? 0
    }

    /// When the first request since the last call arrived and when the last answer left (nil when
    /// none came); the next call starts a new span.
    func takeSpan() -> (first: ContinuousClock.Instant, last: ContinuousClock.Instant)? {
        (try? thread.sync {
            defer { self.state.firstArrival = nil; self.state.lastAnswer = nil }
            guard let first = self.state.firstArrival, let last = self.state.lastAnswer else { return nil }
            return (first, last)
        }) ?? nil
    }

    func stop() {
        let server = server
        let state = state
        try? thread.sync {
            state.timer.close()
            server.shutdown {}
        }
        thread.shutdown()
    }
}
