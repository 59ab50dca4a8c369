import CHTTPParser
import CUV
import Glibc
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

/// One accepted TCP connection: parses requests, dispatches them, writes the answers in request
/// order, and enforces every `ServerLimits` bound. Loop thread only.
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
    private struct Inbound {
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
    private let limits: ServerLimits
    private let tcp: UnsafeMutablePointer<uv_tcp_t>
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private var openHandles = 2
    private let parser: RequestParser
    private(set) var phase = Phase.open
    /// Requests whose responses are not complete yet, in request order; the first is being written.
    private var slots: [Responder] = []
    private var inbound: Inbound?
    private var output: [UInt8] = []
    /// True while http_parser runs: output is batched and re-entrant parsing is deferred.
    private var parsing = false
    private(set) var queuedBytes = 0
    private var paused: ReadPause = []
    private var reading = false
    private var backlog: [UInt8] = []
    private var acceptingRequests = true
    private var shutdownRequested = false
    private var peerClosed = false
    /// Set by `abort()`: bytes already produced still go out, nothing more, then a hard close.
    private var aborting = false
    private var lingerBudget = 0
    /// Set by the server for a connection accepted only to be told 503.
    var overCapacity = false

    private var timerDue: UInt64 = 0
    private var headStartedAt: UInt64 = 0
    private var lastBodyAt: UInt64 = 0
    private var lastWriteAt: UInt64 = 0
    private var idleSince: UInt64 = 0
    private var lingerUntil: UInt64 = 0

    var pendingResponses: Int { slots.count }

    var stream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_stream_t.self)
    }

    private var now: UInt64 { uv_now(loop.raw) }

    init(server: HTTPServer) throws {
        self.server = server
        loop = server.loop
        limits = server.limits
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
        uv_tcp_nodelay(tcp, 1)
        idleSince = now
        armTimer(idleSince + limits.idleTimeout.milliseconds)
        startReading()
    }

    // MARK: reading

    private func startReading() {
        guard !reading, phase != .closed, phase == .lingering || paused.isEmpty else { return }
        let status = uv_read_start(stream, { handle, _, buffer in
            buffer?.pointee = handleOwner(handle, as: HTTPConnection.self).server.readBuffer
        }, { handle, count, _ in
            handleOwner(handle, as: HTTPConnection.self).didRead(count)
        })
        if status == 0 { reading = true }
    }

    private func stopReading() {
        guard reading else { return }
        uv_read_stop(stream)
        reading = false
    }

    func pauseReading(_ reason: ReadPause) {
        paused.insert(reason)
        stopReading()
    }

    func resumeReading(_ reason: ReadPause) {
        guard paused.contains(reason) else { return }
        paused.remove(reason)
        if reason == .bodyConsumer && inbound != nil {
            lastBodyAt = now
            armTimer(lastBodyAt + limits.bodyTimeout.milliseconds)
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
        if phase == .lingering || parser.inMessage || slots.isEmpty || slots.first?.state == .streaming {
            close()
            return
        }
        // A client may half-close after its last request: finish answering, then close.
        acceptingRequests = false
        paused.insert(.closing)
    }

    private func feed(_ base: UnsafePointer<CChar>, _ count: Int) {
        guard acceptingRequests, phase == .open else { return }
        parsing = true
        let consumed = parser.execute(base, count)
        parsing = false
        if phase == .closed { return }
        if parser.isPaused {
            if acceptingRequests && consumed < count {
                backlog.append(contentsOf: UnsafeRawBufferPointer(start: base + consumed, count: count - consumed))
            }
            stopReading()
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
        flush()
        resumePipelineIfPossible()
    }

    // MARK: parser events

    func parserBeganMessage() {
        headStartedAt = now
        armTimer(headStartedAt + limits.headerTimeout.milliseconds)
    }

    func parserCompletedHead(_ head: RequestHead) -> Bool {
        guard acceptingRequests else { return false }
        var request = HTTPRequest(method: head.method, target: head.target, headers: head.headers, version: head.version)
        request.requestID = server.requestIDs.id(offered: head.headers[RequestIDs.headerName])
        let responder = Responder(connection: self, head: head, path: request.path, requestID: request.requestID,
                                  keepAlive: head.keepAlive && !server.isShuttingDown)
        slots.append(responder)
        lastBodyAt = now
        if let expectation = head.unsupportedExpectation {
            let shown = expectation.utf8.count <= 64 ? expectation : String(decoding: expectation.utf8.prefix(64), as: UTF8.self) + "…"
            return answerAtHead(responder, head, .problem(Problem(.expectationFailed, detail: "Expect: \(shown) is not supported; only 100-continue is")))
        }
        switch server.router.match(head.method, path: request.path) {
        case .notFound:
            return answerAtHead(responder, head, .problem(Problem(.notFound, detail: "no resource at \(request.path)")))
        case .badPath:
            return answerAtHead(responder, head, .problem(Problem(.malformedRequest, detail: "path is not valid percent-encoded UTF-8")))
        case .methodNotAllowed(let allow):
            var response = HTTPResponse.problem(Problem(.methodNotAllowed, detail: "\(head.method) is not allowed on \(request.path)"))
            response.headers.set("Allow", allow.map(\.rawValue).joined(separator: ", "))
            return answerAtHead(responder, head, response)
        case .found(let route, let parameters):
            let maxBody = route.options.maxBodyBytes ?? limits.maxBodyBytes
            if let length = head.contentLength, length > UInt64(max(0, maxBody)) {
                responder.keepAlive = false
                acceptingRequests = false
                responder.respond(.problem(Problem(.payloadTooLarge, detail: "request body of \(length) bytes exceeds the limit of \(maxBody) bytes")))
                return false
            }
            request.parameters = parameters
            if head.method == .options { request.allowedMethods = server.router.methods(path: request.path) }
            responder.handlerTimeout = route.options.handlerTimeout ?? limits.handlerTimeout
            if head.expectsContinue && head.hasBody && head.version.minor >= 1 {
                appendOutput(for: responder) { $0.append(contentsOf: ResponseEncoder.continueLine) }
            }
            switch route.options.body {
            case .buffered:
                if let length = head.contentLength, length > 0 {
                    request.body.reserveCapacity(Int(min(length, 1 << 20)))
                }
                inbound = Inbound(responder: responder, request: request, handler: route.handler, maxBody: maxBody)
            case .streamed:
                let body = RequestBodyStream(connection: self)
                request.bodyStream = body
                inbound = Inbound(responder: responder, request: nil, handler: nil, maxBody: maxBody, bodyStream: body)
                route.handler(request, responder)
            }
            if head.hasBody { armTimer(now + limits.bodyTimeout.milliseconds) }
            return phase == .open
        }
    }

    /// Answers a request before its body (404, 405, 400). Skipping an unread body is unsafe to
    /// guess at, so a request with a body also ends the connection.
    private func answerAtHead(_ responder: Responder, _ head: RequestHead, _ response: HTTPResponse) -> Bool {
        if head.hasBody {
            responder.keepAlive = false
            acceptingRequests = false
            responder.respond(response)
            return false
        }
        inbound = Inbound(responder: responder, request: nil, handler: nil, maxBody: 0)
        responder.respond(response)
        return true
    }

    func parserReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard inbound != nil else { return true }
        inbound!.received += bytes.count
        lastBodyAt = now
        if inbound!.received > inbound!.maxBody {
            let current = inbound!
            inbound = nil
            current.bodyStream?.fail(.tooLarge(limit: current.maxBody))
            acceptingRequests = false
            current.responder.keepAlive = false
            current.responder.respond(.problem(Problem(.payloadTooLarge, detail: "request body exceeds the limit of \(current.maxBody) bytes")))
            pauseReading(.closing)
            finishIfDone()
            return false
        }
        if let body = inbound!.bodyStream {
            body.deliver(bytes)
        } else if inbound!.request != nil {
            inbound!.request!.body.append(contentsOf: bytes)
        }
        return phase == .open
    }

    func parserCompletedMessage() {
        if let current = inbound {
            inbound = nil
            if let body = current.bodyStream {
                body.end()
            } else if let request = current.request, let handler = current.handler {
                handler(request, current.responder)
            }
            if !current.responder.keepAlive { acceptingRequests = false }
            startHandlerClock(current.responder)
        }
        if !acceptingRequests || phase != .open {
            parser.pause()
            paused.insert(.closing)
            finishIfDone()
        } else if slots.count >= limits.maxPipelinedRequests || queuedBytes + output.count >= limits.writeHighWaterMark {
            parser.pause()
            paused.insert(.pipeline)
        }
    }

    /// The handler now has everything it will get; from here it has `handlerTimeout` to answer.
    private func startHandlerClock(_ responder: Responder) {
        guard responder.state == .waiting, !responder.closed, let timeout = responder.handlerTimeout else { return }
        let (deadline, overflow) = now.addingReportingOverflow(timeout.milliseconds)
        responder.handlerDeadline = overflow ? .max : deadline
        armTimer(responder.handlerDeadline)
    }

    /// Parsing resumes once the client's earlier responses have drained.
    private func resumePipelineIfPossible() {
        guard !parsing, phase == .open, paused.contains(.pipeline), acceptingRequests,
              slots.count < limits.maxPipelinedRequests, queuedBytes < limits.writeHighWaterMark / 2
        else { return }
        paused.remove(.pipeline)
        parser.resume()
        if !backlog.isEmpty {
            let pending = backlog
            backlog = []
            pending.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    if let base = chars.baseAddress { feed(base, chars.count) }
                }
            }
        }
        startReading()
    }

    // MARK: answers

    /// Answers with an error and ends the connection after everything before it is written.
    func answerAndClose(_ kind: Problem.Kind, _ detail: String) {
        let responder: Responder
        if let current = inbound, current.responder.state == .waiting {
            responder = current.responder
        } else {
            let head = RequestHead(
                method: HTTPMethod(rawValue: "-"), target: "-", headers: HTTPHeaders(), version: .http1_1,
                keepAlive: false, contentLength: nil, chunked: false, expectsContinue: false
            )
            responder = Responder(connection: self, head: head, path: "-", requestID: server.requestIDs.id(offered: nil), keepAlive: false)
            slots.append(responder)
        }
        inbound?.bodyStream?.fail(kind == .requestTimeout ? .timedOut : .malformed)
        inbound = nil
        acceptingRequests = false
        responder.keepAlive = false
        pauseReading(.closing)
        backlog = []
        responder.respond(.problem(Problem(kind, detail: detail)))
        finishIfDone()
    }

    func send(_ response: HTTPResponse, for slot: Responder) {
        let withBody = slot.method != .head && response.status.allowsBody
        let date = server.currentDate()
        appendOutput(for: slot) { out in
            ResponseEncoder.writeHead(
                status: response.status, headers: response.headers, framing: .length(response.body.count),
                keepAlive: slot.keepAlive, version: slot.version, date: date, requestID: slot.requestID, into: &out
            )
            if withBody { out.append(contentsOf: response.body) }
        }
        slot.bodyBytes = withBody ? response.body.count : 0
        complete(slot)
    }

    func startStream(status: HTTPStatus, headers: HTTPHeaders, framing: BodyFraming, for slot: Responder) {
        let date = server.currentDate()
        appendOutput(for: slot) { out in
            ResponseEncoder.writeHead(
                status: status, headers: headers, framing: framing,
                keepAlive: slot.keepAlive, version: slot.version, date: date, requestID: slot.requestID, into: &out
            )
        }
    }

    func writeStreamData(_ bytes: UnsafeRawBufferPointer, framing: BodyFraming, for slot: Responder) {
        slot.bodyBytes += bytes.count
        appendOutput(for: slot) { out in
            if case .chunked = framing {
                ResponseEncoder.writeChunk(bytes, into: &out)
            } else {
                out.append(contentsOf: bytes)
            }
        }
    }

    func finishStream(for slot: Responder, framing: BodyFraming, abort: Bool) {
        guard !slot.closed else { return }
        if case .chunked = framing {
            appendOutput(for: slot) { $0.append(contentsOf: ResponseEncoder.lastChunk) }
        }
        if case .untilClose = framing { slot.keepAlive = false }
        if abort { slot.keepAlive = false }
        slot.state = .finished
        complete(slot)
    }

    func canWrite(for slot: Responder) -> Bool {
        guard phase == .open, !slot.closed else { return false }
        if slot === slots.first { return queuedBytes + output.count < limits.writeHighWaterMark }
        return slot.pending.count < limits.writeHighWaterMark
    }

    /// Output of the response being written goes to the socket buffer; output of later responses
    /// waits in their own slot until they are first in line.
    private func appendOutput(for slot: Responder, _ body: (inout [UInt8]) -> Void) {
        guard phase == .open, !slot.closed, !aborting else { return }
        if slot === slots.first {
            body(&output)
            if !parsing || output.count >= 64 * 1024 { flush() }
        } else {
            body(&slot.pending)
        }
    }

    private func complete(_ slot: Responder) {
        guard !slot.closed else { return }
        slot.complete = true
        if slot === slots.first { advance() }
    }

    /// Retires finished responses from the front of the line and promotes the next one.
    private func advance() {
        while let first = slots.first, first.complete {
            slots.removeFirst()
            first.retire()
            logAccess(first)
            if !first.keepAlive {
                acceptingRequests = false
                pauseReading(.closing)
                backlog = []
                let dropped = slots
                slots = []
                for slot in dropped { slot.connectionDidClose() }
                if let current = inbound, current.responder === first {
                    // Answered before its body was read (a refused upload): the rest of the body
                    // is skipped by the lingering close, not awaited until the body timeout.
                    inbound = nil
                    current.bodyStream?.fail(.clientDisconnected)
                    finishIfDone()
                }
                break
            }
            if let next = slots.first, !next.pending.isEmpty {
                output.append(contentsOf: next.pending)
                next.pending = []
            }
        }
        if slots.isEmpty {
            idleSince = now
            armTimer(idleSince + limits.idleTimeout.milliseconds)
        }
        if !parsing { flush() }
        if phase != .open { return }
        if let stream = slots.first?.stream, queuedBytes + output.count < limits.writeHighWaterMark {
            stream.notifyWritable()
        }
        finishIfDone()
        resumePipelineIfPossible()
    }

    /// Once no request will be read and every answer is written, shut down our side.
    private func finishIfDone() {
        guard phase == .open, !acceptingRequests, slots.isEmpty, inbound == nil, !shutdownRequested else { return }
        shutdownRequested = true
        flush()
        guard phase == .open else { return }
        let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        let status = uv_shutdown(request, stream) { request, status in
            guard let request else { return }
            let handle = request.pointee.handle
            request.deallocate()
            guard let handle, handle.pointee.data != nil else { return }
            handleOwner(handle, as: HTTPConnection.self).didShutdown(status)
        }
        if status < 0 {
            request.deallocate()
            close()
        }
    }

    private func didShutdown(_ status: Int32) {
        guard phase == .open else { return }
        if status < 0 || peerClosed {
            close()
            return
        }
        phase = .lingering
        lingerBudget = limits.maxLingerBytes
        lingerUntil = now + limits.lingerTimeout.milliseconds
        armTimer(lingerUntil)
        startReading()
    }

    // MARK: writing

    /// Hands the output buffer to the socket: directly when nothing is queued, else (or for the
    /// remainder) as one `uv_write` whose request and bytes share one allocation.
    private func flush() {
        guard phase == .open, !output.isEmpty else { return }
        var offset = 0
        if queuedBytes == 0 {
            let result = output.withUnsafeMutableBytes { raw -> Int32 in
                var buffer = uv_buf_init(raw.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(raw.count))
                return uv_try_write(stream, &buffer, 1)
            }
            if result > 0 {
                offset = Int(result)
            } else if result < 0 && result != UV_EAGAIN.rawValue {
                close()
                return
            }
        }
        if offset < output.count {
            let count = output.count - offset
            let headerSize = MemoryLayout<uv_write_t>.stride
            guard let memory = malloc(headerSize + count) else {
                close()
                return
            }
            output.withUnsafeBytes { raw in
                (memory + headerSize).copyMemory(from: raw.baseAddress! + offset, byteCount: count)
            }
            let request = memory.bindMemory(to: uv_write_t.self, capacity: 1)
            request.pointee.data = UnsafeMutableRawPointer(bitPattern: count)
            var buffer = uv_buf_init((memory + headerSize).assumingMemoryBound(to: CChar.self), UInt32(count))
            let status = uv_write(request, stream, &buffer, 1) { request, status in
                guard let request else { return }
                let count = Int(bitPattern: request.pointee.data)
                let handle = request.pointee.handle
                free(request)
                guard let handle, handle.pointee.data != nil else { return }
                handleOwner(handle, as: HTTPConnection.self).didWrite(count, status: status)
            }
            if status < 0 {
                free(memory)
                close()
                return
            }
            queuedBytes += count
            lastWriteAt = now
            armTimer(lastWriteAt + limits.writeTimeout.milliseconds)
        }
        if output.capacity > 256 * 1024 {
            output = []
            output.reserveCapacity(4096)
        } else {
            output.removeAll(keepingCapacity: true)
        }
    }

    private func didWrite(_ count: Int, status: Int32) {
        queuedBytes -= count
        lastWriteAt = now
        guard phase == .open else { return }
        if status < 0 || (aborting && queuedBytes == 0) {
            close()
            return
        }
        if queuedBytes < limits.writeHighWaterMark / 2, let stream = slots.first?.stream {
            stream.notifyWritable()
        }
        resumePipelineIfPossible()
    }

    // MARK: timeouts

    /// Makes sure the timer fires no later than `due`. Deadlines move all the time; the timer is
    /// only re-armed when one moves earlier, and on firing it works out what is really due.
    private func armTimer(_ due: UInt64) {
        guard phase != .closed, timerDue == 0 || due < timerDue else { return }
        timerDue = due
        let current = now
        uv_timer_start(timer, { timer in
            handleOwner(timer, as: HTTPConnection.self).timerFired()
        }, due > current ? due - current : 0, 0)
    }

    private func timerFired() {
        timerDue = 0
        if let next = nextDeadline(now: now) { armTimer(next) }
    }

    /// Acts on every deadline that has passed; returns the next one.
    private func nextDeadline(now: UInt64) -> UInt64? {
        switch phase {
        case .closed:
            return nil
        case .lingering:
            if now >= lingerUntil {
                close()
                return nil
            }
            return lingerUntil
        case .open:
            var next = UInt64.max
            var late: [Responder] = []
            for slot in slots where slot.state == .waiting && slot.handlerDeadline != 0 {
                if now >= slot.handlerDeadline {
                    late.append(slot)
                } else {
                    next = min(next, slot.handlerDeadline)
                }
            }
            for slot in late { slot.handlerDidTimeOut() }
            if phase != .open { return nil }
            if queuedBytes > 0 {
                let due = lastWriteAt + limits.writeTimeout.milliseconds
                if now >= due {
                    server.logger.debug("closing connection: no write progress for \(limits.writeTimeout)")
                    close()
                    return nil
                }
                next = min(next, due)
            }
            if inbound != nil {
                if !paused.contains(.bodyConsumer) {
                    let due = lastBodyAt + limits.bodyTimeout.milliseconds
                    if now >= due {
                        answerAndClose(.requestTimeout, "request body not received within \(limits.bodyTimeout)")
                        return phase == .closed ? nil : next == .max ? nil : next
                    }
                    next = min(next, due)
                }
            } else if parser.inMessage && acceptingRequests {
                let due = headStartedAt + limits.headerTimeout.milliseconds
                if now >= due {
                    if slots.isEmpty {
                        answerAndClose(.requestTimeout, "request head not received within \(limits.headerTimeout)")
                    } else {
                        acceptingRequests = false
                        pauseReading(.closing)
                        finishIfDone()
                    }
                    return nil
                }
                next = min(next, due)
            } else if slots.isEmpty && queuedBytes == 0 && !shutdownRequested {
                let due = idleSince + limits.idleTimeout.milliseconds
                if now >= due {
                    close()
                    return nil
                }
                next = min(next, due)
            }
            return next == .max ? nil : next
        }
    }

    // MARK: shutdown

    /// Graceful shutdown: no new request is read; answers in flight are finished, then closed.
    func beginShutdown() {
        guard phase == .open else { return }
        if let current = inbound {
            // The body of a request already being received is read to its end and answered.
            current.responder.keepAlive = false
            return
        }
        acceptingRequests = false
        pauseReading(.closing)
        backlog = []
        if let last = slots.last, last.state == .waiting { last.keepAlive = false }
        if slots.isEmpty {
            close()
        } else {
            finishIfDone()
        }
    }

    /// Tells the client the server is full, then closes.
    func rejectOverCapacity() {
        answerAndClose(.unavailable, "the server is at its connection limit; retry later")
    }

    /// Ends the connection without completing its answers, after the bytes already produced
    /// (so a truncated body is visibly truncated rather than missing).
    func abort() {
        guard phase == .open, !aborting else {
            close()
            return
        }
        aborting = true
        acceptingRequests = false
        pauseReading(.closing)
        flush()
        if queuedBytes == 0 { close() }
    }

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
        output = []
        backlog = []
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

    // MARK: access log

    /// One line per answered request, as fields (a JSON log collector indexes them): never the
    /// query, which may carry a key (`access_token`), and a path cut to `maximumLoggedPath` bytes.
    private func logAccess(_ slot: Responder) {
        server.logger.info("access", metadata: [
            "method": .string(slot.method.rawValue),
            "path": .string(Self.loggedPath(slot.path)),
            "status": .stringConvertible(slot.status),
            "bytes": .stringConvertible(slot.bodyBytes),
            "duration_ms": .stringConvertible(Self.milliseconds(since: slot.startedAt)),
            "request_id": .string(slot.requestID),
        ])
    }

    static let maximumLoggedPath = 1024

    private static func loggedPath(_ path: String) -> String {
        guard path.utf8.count > maximumLoggedPath else { return path }
        return String(decoding: path.utf8.prefix(maximumLoggedPath), as: UTF8.self) + "…"
    }

    /// Milliseconds with microsecond resolution (`0.123`).
    private static func milliseconds(since start: UInt64) -> Double {
        Double((uv_hrtime() &- start) / 1000) / 1000
    }
}
