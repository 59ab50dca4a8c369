import CUV
import Logging
import Loop

/// One accepted TCP connection, on the loop thread (checked in debug builds): its life from
/// accept to close — open, then lingering (our side shut down, input discarded for a bounded time
/// so the client reads the last answer rather than a reset), then closed — graceful shutdown,
/// aborts, and the deadlines acted on when its clock fires.
///
/// The work is done by its parts, each with one job: `ConnectionSocket` (the tcp handle, reading
/// and its pauses, output, shutdown), `RequestReader` (parsing, routing, bodies, pipelining),
/// `ResponseQueue` (answers in request order, file bodies), `ConnectionClock` (the timer and
/// `ConnectionDeadlines`), `AccessLog`. The connection passes events between them.
///
/// The socket's and the clock's handles each keep their part, and each part its connection, until
/// libuv has closed the handle; then the connection tells its server it is gone.
final class HTTPConnection {
    enum Phase {
        case open
        /// The last answer is written and our side shut down; input is read and discarded for a
        /// bounded time so the client sees that answer instead of a reset.
        case lingering
        case closed
    }

    let server: HTTPServer
    let loop: EventLoop
    let limits: ServerLimits
    let socket: ConnectionSocket
    let clock: ConnectionClock
    private(set) lazy var reader = RequestReader(connection: self, maxHeaderBytes: limits.maxHeaderBytes)
    private(set) lazy var responses = ResponseQueue(connection: self)
    private var openHandles = 2
    private(set) var phase = Phase.open
    var acceptingRequests = true
    private var shutdownRequested = false
    private var peerClosed = false
    /// Set by `abort()`: bytes already produced still go out, nothing more, then a hard close.
    private(set) var aborting = false
    private var lingerBudget = 0
    /// Set by the server for a connection accepted only to be told 503.
    var overCapacity = false

    init(server: HTTPServer) throws {
        self.server = server
        loop = server.loop
        loop.assertInLoopThread()
        limits = server.limits
        socket = try ConnectionSocket(loop: loop)
        clock = ConnectionClock(loop: loop, limits: limits)
        socket.connection = self
        clock.connection = self
    }

    var isOpen: Bool { phase == .open }
    var isClosed: Bool { phase == .closed }
    var stream: UnsafeMutablePointer<uv_stream_t> { socket.stream }
    var pendingResponses: Int { responses.count }
    var queuedBytes: Int { socket.output.queuedBytes }

    /// Starts reading once the socket is accepted.
    func start() {
        loop.assertInLoopThread()
        socket.setNoDelay()
        clock.arm(clock.deadlines.becameIdle(at: clock.now))
        socket.startReading()
    }

    // MARK: the socket's events

    func didRead(_ base: UnsafePointer<CChar>, _ count: Int) {
        server.receivedBytes &+= count
        if phase == .lingering {
            lingerBudget -= count
            if lingerBudget <= 0 { close() }
            return
        }
        reader.feed(base, count)
    }

    func peerDidClose() {
        peerClosed = true
        socket.stopReading()
        if phase == .lingering || reader.readingHead || responses.isEmpty || responses.first?.state == .streaming {
            close()
            return
        }
        // A client may half-close after its last request: finish answering, then close.
        acceptingRequests = false
        socket.hold(.closing)
    }

    /// Hands the output to the socket; write progress is awaited from here on when some of it
    /// had to be queued, and a file body waiting for the socket to be clear may start.
    func flush() {
        guard phase == .open else { return }
        switch socket.flush() {
        case .written:
            responses.startTransferIfReady()
        case .queued:
            clock.arm(clock.deadlines.wrote(at: clock.now))
        case .failed:
            close()
        }
    }

    /// A queued write finished (`ConnectionSocket.didWrite`).
    func didWrite(status: Int32) {
        clock.deadlines.wrote(at: clock.now)
        guard phase == .open else { return }
        if status < 0 || (aborting && socket.output.queuedBytes == 0) {
            close()
            return
        }
        responses.outputDrained()
        reader.resumePipelineIfPossible()
    }

    /// Reading pauses for `reason` (a streamed body's consumer, `RequestBodyStream`).
    func pauseReading(_ reason: ReadPause) {
        loop.assertInLoopThread()
        socket.pause(reason)
    }

    func resumeReading(_ reason: ReadPause) {
        loop.assertInLoopThread()
        guard socket.paused.contains(reason) else { return }
        socket.release(reason)
        if reason == .bodyConsumer { reader.bodyResumed() }
        if phase != .closed { socket.startReading() }
    }

    /// No further request will be read on this connection.
    func stopAcceptingRequests() {
        acceptingRequests = false
        socket.pause(.closing)
        reader.dropBacklog()
    }

    // MARK: deadlines

    /// The clock fired: acts on each deadline that has passed (each action changes what is
    /// due), then arms the next.
    func timerFired() {
        while phase != .closed {
            let handlerDeadline = phase == .open ? timeOutLateHandlers() : nil
            if phase == .closed { return }
            switch clock.deadlines.check(activity, handlerDeadline: handlerDeadline, now: clock.now) {
            case .next(let due):
                if let due { clock.arm(due) }
                return
            case .expired(let expiry):
                expire(expiry)
            }
        }
    }

    private var activity: ConnectionDeadlines.Activity {
        ConnectionDeadlines.Activity(
            lingering: phase == .lingering,
            writing: socket.output.queuedBytes > 0 || responses.transferActive,
            receivingBody: reader.inbound != nil,
            bodyPaused: socket.paused.contains(.bodyConsumer),
            readingHead: reader.readingHead && acceptingRequests,
            idle: responses.isEmpty && socket.output.queuedBytes == 0 && !shutdownRequested
        )
    }

    /// Answers 503 for each handler past its deadline; returns the earliest deadline of the others.
    private func timeOutLateHandlers() -> UInt64? {
        let current = clock.now
        var next: UInt64?
        var late: [Responder] = []
        for slot in responses.slots where slot.state == .waiting && slot.handlerDeadline != 0 {
            if current >= slot.handlerDeadline {
                late.append(slot)
            } else {
                next = min(next ?? .max, slot.handlerDeadline)
            }
        }
        for slot in late { slot.handlerDidTimeOut() }
        return next
    }

    private func expire(_ expiry: ConnectionDeadlines.Expiry) {
        switch expiry {
        case .writeStalled:
            server.logger.debug("closing a connection that made no write progress", metadata: [
                "write_timeout_ms": .stringConvertible(clock.deadlines.writeTimeout),
            ])
            close()
        case .body:
            answerAndClose(.requestTimeout, "request body not received within \(limits.bodyTimeout)")
        case .head:
            reader.abandonUnrecognizedLine()
            if responses.isEmpty {
                answerAndClose(.requestTimeout, "request head not received within \(limits.headerTimeout)")
            } else {
                stopAcceptingRequests()
                finishIfDone()
            }
        case .idle, .linger:
            close()
        }
    }

    // MARK: error answers

    /// Answers with an error and ends the connection after everything before it is written.
    func answerAndClose(_ kind: Problem.Kind, _ detail: String) {
        answerAndClose(.problem(Problem(kind, detail: detail)), bodyFailure: kind == .requestTimeout ? .timedOut : .malformed)
    }

    /// The same with any answer: for the request being received, else for one read no further
    /// than its request line (`method` and `path` for the access log), or none (`-`).
    func answerAndClose(_ response: HTTPResponse, method: HTTPMethod = HTTPMethod(rawValue: "-"), path: String = "-",
                        bodyFailure: RequestBodyStream.Failure = .malformed) {
        let responder: Responder
        if let current = reader.inbound, current.responder.state == .waiting {
            responder = current.responder
        } else {
            let head = RequestHead(
                method: method, target: path, headers: HTTPHeaders(), version: .http1_1,
                keepAlive: false, contentLength: nil, chunked: false, expectsContinue: false
            )
            responder = Responder(connection: self, head: head, path: path, requestID: server.requestIDs.id(offered: nil), keepAlive: false)
            responses.append(responder)
        }
        reader.abandonInbound(bodyFailure)
        stopAcceptingRequests()
        responder.keepAlive = false
        responder.respond(response)
        finishIfDone()
    }

    /// Tells the client the server is full, then closes.
    func rejectOverCapacity() {
        answerAndClose(.unavailable, "the server is at its connection limit; retry later")
    }

    // MARK: the end

    /// Once no request will be read and every answer is written, shut down our side.
    func finishIfDone() {
        guard phase == .open, !acceptingRequests, responses.isEmpty, reader.inbound == nil, !shutdownRequested else { return }
        shutdownRequested = true
        flush()
        guard phase == .open else { return }
        if !socket.shutdown() { close() }
    }

    /// Our side is shut down (`ConnectionSocket.shutdown`): linger, unless the client is gone.
    func didShutdown(_ status: Int32) {
        guard phase == .open else { return }
        if status < 0 || peerClosed {
            close()
            return
        }
        phase = .lingering
        lingerBudget = limits.maxLingerBytes
        clock.arm(clock.deadlines.beganLingering(at: clock.now))
        socket.readToDiscard()
    }

    /// Graceful shutdown: no new request is read; answers in flight are finished, then closed.
    func beginShutdown() {
        loop.assertInLoopThread()
        guard phase == .open else { return }
        if let current = reader.inbound {
            // The body of a request already being received is read to its end and answered.
            current.responder.keepAlive = false
            return
        }
        stopAcceptingRequests()
        if let last = responses.slots.last, last.state == .waiting { last.keepAlive = false }
        if responses.isEmpty {
            close()
        } else {
            finishIfDone()
        }
    }

    /// Ends the connection without completing its answers, after the bytes already produced
    /// (so a truncated body is visibly truncated rather than missing).
    func abort() {
        loop.assertInLoopThread()
        guard phase == .open, !aborting else {
            close()
            return
        }
        aborting = true
        acceptingRequests = false
        socket.pause(.closing)
        flush()
        if socket.output.queuedBytes == 0 { close() }
    }

    func close() {
        guard phase != .closed else { return }
        phase = .closed
        socket.stopReading()
        reader.abandonInbound(.clientDisconnected)
        responses.dropAll()
        reader.dropBacklog()
        reader.abandonUnrecognizedLine()
        socket.close()
        clock.close()
    }

    func socketDidClose() { handleDidClose() }
    func clockDidClose() { handleDidClose() }

    private func handleDidClose() {
        openHandles -= 1
        if openHandles == 0 {
            reader.deallocate()
            server.connectionDidClose(self)
        }
    }
}
