import CHTTPParser
import CUV
import Logging
import Loop

/// Why reading from a connection is paused; reading runs only while the set is empty.
struct ReadPause: OptionSet {
    let rawValue: UInt8
    /// Too many responses outstanding or too many bytes queued: the client must wait.
    static let pipeline = ReadPause(rawValue: 1)
    /// A streamed request body's consumer asked to wait.
    static let bodyConsumer = ReadPause(rawValue: 2)
    /// No further request will be read (error answered, `Connection: close`, shutdown).
    static let closing = ReadPause(rawValue: 4)
}

/// One accepted TCP connection, on the loop thread (checked in debug builds).
///
/// Its jobs, each in its own file: reading the socket and feeding http_parser (here); requests —
/// routing a head, bodies, pipelining order (`+Requests`); answers in request order and their
/// output (`+Responses`, with `ConnectionOutput`); the end of a connection — graceful shutdown,
/// the lingering close, aborts (`+Closing`); the five deadlines (`ConnectionDeadlines`, a pure
/// value, acted on here); the access log (`AccessLog`).
///
/// The tcp and timer handles both hold a retain on the connection (the `LoopHandleOwner` rule),
/// so it lives until libuv has finished with both, however handlers hold on to responders.
final class HTTPConnection: LoopHandleOwner {
    enum Phase {
        case open
        /// The last answer is written and our side shut down; input is read and discarded for a
        /// bounded time so the client sees that answer instead of a reset.
        case lingering
        case closed
    }

    /// The request whose head is parsed and whose body is still arriving.
    struct Inbound {
        let responder: Responder
        /// Nil when the request was answered at its head and only its body is left to skip.
        var request: HTTPRequest?
        var handler: RequestHandler?
        let maxBody: Int
        var received = 0
        var bodyStream: RequestBodyStream?
    }

    let server: HTTPServer
    let loop: EventLoop
    let limits: ServerLimits
    private let tcp: UnsafeMutablePointer<uv_tcp_t>
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private var openHandles = 2
    let parser: RequestParser
    var phase = Phase.open
    /// Requests whose responses are not complete yet, in request order; the first is being written.
    var slots: [Responder] = []
    var inbound: Inbound?
    var output = ConnectionOutput()
    var deadlines: ConnectionDeadlines
    /// True while http_parser runs: output is batched and re-entrant parsing is deferred.
    var parsing = false
    var paused: ReadPause = []
    private var reading = false
    /// Bytes read while parsing was paused for pipelining, parsed when it resumes.
    var backlog: [UInt8] = []
    var acceptingRequests = true
    var shutdownRequested = false
    var peerClosed = false
    /// Set by `abort()`: bytes already produced still go out, nothing more, then a hard close.
    var aborting = false
    var lingerBudget = 0
    /// The request line of a method http_parser refused, while it is being read.
    var unrecognizedLine: UnrecognizedRequestLine?
    /// Set by the server for a connection accepted only to be told 503.
    var overCapacity = false

    var pendingResponses: Int { slots.count }
    var queuedBytes: Int { output.queuedBytes }

    var stream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_stream_t.self)
    }

    var now: UInt64 { uv_now(loop.raw) }

    init(server: HTTPServer) throws {
        self.server = server
        loop = server.loop
        loop.assertInLoopThread()
        limits = server.limits
        deadlines = ConnectionDeadlines(limits: limits)
        parser = RequestParser(maxHeaderBytes: limits.maxHeaderBytes)
        tcp = .allocate(capacity: 1)
        timer = .allocate(capacity: 1)
        UnsafeMutableRawPointer(tcp).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<uv_tcp_t>.size)
        UnsafeMutableRawPointer(timer).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<uv_timer_t>.size)
        let tcpStatus = uv_tcp_init(loop.raw, tcp)
        guard tcpStatus == 0 else {
            tcp.deallocate()
            timer.deallocate()
            parser.deallocate()
            throw UVError(tcpStatus, "uv_tcp_init")
        }
        uv_timer_init(loop.raw, timer)
        // The handle ownership rule of LoopHandle.swift, done by hand because `self` only exists now.
        tcp.pointee.data = Unmanaged.passRetained(self).toOpaque()
        timer.pointee.data = Unmanaged.passRetained(self).toOpaque()
        parser.connection = self
        parser.attach()
    }

    /// Starts reading once the socket is accepted.
    func start() {
        loop.assertInLoopThread()
        uv_tcp_nodelay(tcp, 1)
        armTimer(deadlines.becameIdle(at: now))
        startReading()
    }

    // MARK: reading

    func startReading() {
        guard !reading, phase != .closed, phase == .lingering || paused.isEmpty else { return }
        let status = uv_read_start(stream, { handle, _, buffer in
            buffer?.pointee = handleOwner(handle, as: HTTPConnection.self).server.readBuffer
        }, { handle, count, _ in
            handleOwner(handle, as: HTTPConnection.self).didRead(count)
        })
        if status == 0 { reading = true }
    }

    func stopReading() {
        guard reading else { return }
        uv_read_stop(stream)
        reading = false
    }

    func pauseReading(_ reason: ReadPause) {
        loop.assertInLoopThread()
        paused.insert(reason)
        stopReading()
    }

    func resumeReading(_ reason: ReadPause) {
        loop.assertInLoopThread()
        guard paused.contains(reason) else { return }
        paused.remove(reason)
        if reason == .bodyConsumer && inbound != nil {
            armTimer(deadlines.bodyProgressed(at: now))
        }
        startReading()
    }

    private func didRead(_ count: Int) {
        if count < 0 {
            peerDidClose()
            return
        }
        guard count > 0 else { return }
        server.receivedBytes &+= count
        if phase == .lingering {
            lingerBudget -= count
            if lingerBudget <= 0 { close() }
            return
        }
        guard let base = server.readBuffer.base else { return }
        feed(base, count)
    }

    private func peerDidClose() {
        peerClosed = true
        stopReading()
        if phase == .lingering || parser.inMessage || unrecognizedLine != nil || slots.isEmpty || slots.first?.state == .streaming {
            close()
            return
        }
        // A client may half-close after its last request: finish answering, then close.
        acceptingRequests = false
        paused.insert(.closing)
    }

    func feed(_ base: UnsafePointer<CChar>, _ count: Int) {
        guard acceptingRequests, phase == .open else { return }
        if unrecognizedLine != nil {
            readUnrecognizedLine(UnsafeRawBufferPointer(start: base, count: count))
        } else {
            parsing = true
            let consumed = parser.execute(base, count)
            parsing = false
            if phase == .closed { return }
            if parser.isPaused {
                if acceptingRequests && consumed < count {
                    backlog.append(contentsOf: UnsafeRawBufferPointer(start: base + consumed, count: count - consumed))
                }
                stopReading()
            } else if parser.errno == HPE_INVALID_METHOD && acceptingRequests {
                beginUnrecognizedLine(rest: UnsafeRawBufferPointer(start: base + consumed, count: count - consumed))
            } else if parser.errno != HPE_OK {
                if acceptingRequests {
                    // A parse error, not one of our own rejections (those stop accepting first).
                    let tooLarge = parser.headerTooLarge || parser.errno == HPE_HEADER_OVERFLOW
                    answerAndClose(
                        tooLarge ? .headersTooLarge : .malformedRequest,
                        tooLarge ? "request head exceeds \(limits.maxHeaderBytes) bytes" : "malformed request: \(parser.errorDescription)"
                    )
                }
            } else if parser.upgraded {
                // Protocol upgrades are not supported; the bytes after the head are not HTTP.
                acceptingRequests = false
                pauseReading(.closing)
                finishIfDone()
            }
        }
        flush()
        resumePipelineIfPossible()
    }

    // MARK: deadlines

    /// Makes sure the timer fires no later than `due` (see `ConnectionDeadlines.arm`).
    func armTimer(_ due: UInt64) {
        guard phase != .closed, deadlines.arm(due) else { return }
        let current = now
        uv_timer_start(timer, { timer in
            handleOwner(timer, as: HTTPConnection.self).timerFired()
        }, due > current ? due - current : 0, 0)
    }

    private func timerFired() {
        deadlines.timerFired()
        // Acts on each deadline that has passed (each action changes what is due), then arms the next.
        while phase != .closed {
            let handlerDeadline = phase == .open ? timeOutLateHandlers() : nil
            if phase == .closed { return }
            switch deadlines.check(activity, handlerDeadline: handlerDeadline, now: now) {
            case .next(let due):
                if let due { armTimer(due) }
                return
            case .expired(let expiry):
                expire(expiry)
            }
        }
    }

    private var activity: ConnectionDeadlines.Activity {
        ConnectionDeadlines.Activity(
            lingering: phase == .lingering,
            writing: output.queuedBytes > 0 || slots.first?.transfer?.isActive == true,
            receivingBody: inbound != nil,
            bodyPaused: paused.contains(.bodyConsumer),
            readingHead: (parser.inMessage || unrecognizedLine != nil) && acceptingRequests,
            idle: slots.isEmpty && output.queuedBytes == 0 && !shutdownRequested
        )
    }

    /// Answers 503 for each handler past its deadline; returns the earliest deadline of the others.
    private func timeOutLateHandlers() -> UInt64? {
        let current = now
        var next: UInt64?
        var late: [Responder] = []
        for slot in slots where slot.state == .waiting && slot.handlerDeadline != 0 {
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
                "write_timeout_ms": .stringConvertible(deadlines.writeTimeout),
            ])
            close()
        case .body:
            answerAndClose(.requestTimeout, "request body not received within \(limits.bodyTimeout)")
        case .head:
            unrecognizedLine = nil
            if slots.isEmpty {
                answerAndClose(.requestTimeout, "request head not received within \(limits.headerTimeout)")
            } else {
                acceptingRequests = false
                pauseReading(.closing)
                finishIfDone()
            }
        case .idle, .linger:
            close()
        }
    }

    // MARK: closing

    func close() {
        guard phase != .closed else { return }
        phase = .closed
        stopReading()
        let dropped = slots
        slots = []
        let current = inbound
        inbound = nil
        current?.bodyStream?.fail(.clientDisconnected)
        for slot in dropped { slot.connectionDidClose() }
        output.bytes = []
        backlog = []
        unrecognizedLine = nil
        uv_timer_stop(timer)
        closeHandle(tcp)
        closeHandle(timer)
    }

    func handleDidClose() {
        openHandles -= 1
        if openHandles == 0 {
            parser.connection = nil
            parser.deallocate()
            server.connectionDidClose(self)
        }
    }
}
