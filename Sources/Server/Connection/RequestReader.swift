import CHTTPParser
import Loop

/// A connection's requests as they are read: bytes fed to http_parser (`RequestParser`, whose
/// callbacks arrive here), each head routed — or answered at once (404, 405, 413, 417) — its body
/// collected or streamed to the route, the handler's clock started once the request is whole,
/// parsing paused while too many answers are outstanding (pipelining) with the bytes read
/// meanwhile kept as a backlog, and request lines of methods http_parser does not know.
///
/// Owned by its connection, loop thread only.
final class RequestReader {
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

    private unowned let connection: HTTPConnection
    let parser: RequestParser
    /// True while http_parser runs: output is batched and re-entrant parsing is deferred.
    private(set) var parsing = false
    private(set) var inbound: Inbound?
    /// Bytes read while parsing was paused for pipelining, parsed when it resumes.
    private var backlog: [UInt8] = []
    /// The request line of a method http_parser refused, while it is being read.
    private var unrecognizedLine: UnrecognizedRequestLine?

    init(connection: HTTPConnection, maxHeaderBytes: Int) {
        self.connection = connection
        parser = RequestParser(maxHeaderBytes: maxHeaderBytes)
        parser.reader = self
        parser.attach()
    }

    /// Frees the parser; after the connection's handles have closed.
    func deallocate() {
        parser.reader = nil
        parser.deallocate()
    }

    /// A request has begun and is not complete: its head's deadline applies.
    var readingHead: Bool { parser.inMessage || unrecognizedLine != nil }

    // MARK: bytes in

    func feed(_ base: UnsafePointer<CChar>, _ count: Int) {
        guard connection.acceptingRequests, connection.isOpen else { return }
        if unrecognizedLine != nil {
            readUnrecognizedLine(UnsafeRawBufferPointer(start: base, count: count))
        } else {
            parsing = true
            let consumed = parser.execute(base, count)
            parsing = false
            if connection.isClosed { return }
            if parser.isPaused {
                if connection.acceptingRequests && consumed < count {
                    backlog.append(contentsOf: UnsafeRawBufferPointer(start: base + consumed, count: count - consumed))
                }
                connection.socket.stopReading()
            } else if parser.errno == HPE_INVALID_METHOD && connection.acceptingRequests {
                beginUnrecognizedLine(rest: UnsafeRawBufferPointer(start: base + consumed, count: count - consumed))
            } else if parser.errno != HPE_OK {
                if connection.acceptingRequests {
                    // A parse error, not one of our own rejections (those stop accepting first).
                    let tooLarge = parser.headerTooLarge || parser.errno == HPE_HEADER_OVERFLOW
                    let limit = connection.limits.maxHeaderBytes
                    connection.answerAndClose(
                        tooLarge ? .headersTooLarge : .malformedRequest,
                        tooLarge ? "request head exceeds \(limit) bytes" : "malformed request: \(parser.errorDescription)"
                    )
                }
            } else if parser.upgraded {
                // Protocol upgrades are not supported; the bytes after the head are not HTTP.
                connection.stopAcceptingRequests()
                connection.finishIfDone()
            }
        }
        connection.flush()
        resumePipelineIfPossible()
    }

    /// No further request will be read: what is waiting to be parsed is dropped.
    func dropBacklog() {
        backlog = []
    }

    /// The head's deadline passed on a request line of an unknown method: it is not read further.
    func abandonUnrecognizedLine() {
        unrecognizedLine = nil
    }

    /// Parsing resumes once the client's earlier responses have drained.
    func resumePipelineIfPossible() {
        let limits = connection.limits
        guard !parsing, connection.isOpen, connection.socket.paused.contains(.pipeline), connection.acceptingRequests,
              connection.responses.count < limits.maxPipelinedRequests,
              connection.socket.output.queuedBytes < limits.writeHighWaterMark / 2
        else { return }
        connection.socket.release(.pipeline)
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
        connection.socket.startReading()
    }

    // MARK: the request being received

    /// Gives up the request being received, failing its streamed body with `failure`; returns it.
    @discardableResult
    func abandonInbound(_ failure: RequestBodyStream.Failure) -> Inbound? {
        let current = inbound
        inbound = nil
        current?.bodyStream?.fail(failure)
        return current
    }

    /// When `responder` answered the request still being received (a refused upload), its body is
    /// no longer awaited. True if it was.
    func abandonBody(answeredBy responder: Responder) -> Bool {
        guard let current = inbound, current.responder === responder else { return false }
        abandonInbound(.clientDisconnected)
        return true
    }

    /// The client paused or resumed a streamed body: the body's clock starts again.
    func bodyResumed() {
        guard inbound != nil else { return }
        connection.clock.arm(connection.clock.deadlines.bodyProgressed(at: connection.clock.now))
    }

    // MARK: http_parser's callbacks (through RequestParser)

    func parserBeganMessage() {
        connection.clock.arm(connection.clock.deadlines.headBegan(at: connection.clock.now))
    }

    func parserCompletedHead(_ head: RequestHead) -> Bool {
        guard connection.acceptingRequests else { return false }
        let server = connection.server, limits = connection.limits, clock = connection.clock
        var request = HTTPRequest(method: head.method, target: head.target, headers: head.headers, version: head.version)
        request.requestID = server.requestIDs.id(offered: head.headers[RequestIDs.headerName])
        let responder = Responder(connection: connection, head: head, path: request.path, requestID: request.requestID,
                                  keepAlive: head.keepAlive && !server.isShuttingDown)
        connection.responses.append(responder)
        clock.deadlines.bodyProgressed(at: clock.now)
        if let expectation = head.unsupportedExpectation {
            let shown = expectation.utf8.count <= 64 ? expectation : String(decoding: expectation.utf8.prefix(64), as: UTF8.self) + "…"
            return answerAtHead(responder, head, .problem(Problem(.expectationFailed, detail: "Expect: \(shown) is not supported; only 100-continue is")))
        }
        let match = server.router.match(head.method, path: request.path)
        guard case .found(let route, let parameters) = match else {
            return answerAtHead(responder, head, Self.unroutedAnswer(match, method: head.method, path: request.path))
        }
        let maxBody = route.options.maxBodyBytes ?? limits.maxBodyBytes
        if let length = head.contentLength, length > UInt64(max(0, maxBody)) {
            responder.keepAlive = false
            connection.acceptingRequests = false
            responder.respond(.problem(Problem(.payloadTooLarge, detail: "request body of \(length) bytes exceeds the limit of \(maxBody) bytes")))
            return false
        }
        request.parameters = parameters
        if head.method == .options { request.allowedMethods = server.router.methods(path: request.path) }
        responder.handlerTimeout = route.options.handlerTimeout ?? limits.handlerTimeout
        if head.expectsContinue && head.hasBody && head.version.minor >= 1 {
            connection.responses.appendOutput(for: responder) { $0.append(contentsOf: ResponseEncoder.continueLine) }
        }
        switch route.options.body {
        case .buffered:
            if let length = head.contentLength, length > 0 {
                request.body.reserveCapacity(Int(min(length, 1 << 20)))
            }
            inbound = Inbound(responder: responder, request: request, handler: route.handler, maxBody: maxBody)
        case .streamed:
            let body = RequestBodyStream(connection: connection)
            request.bodyStream = body
            inbound = Inbound(responder: responder, request: nil, handler: nil, maxBody: maxBody, bodyStream: body)
            route.handler(request, responder)
        }
        if head.hasBody { clock.arm(ConnectionDeadlines.after(clock.now, clock.deadlines.bodyTimeout)) }
        return connection.isOpen
    }

    /// The answer to a request no route takes: 404, 405 with `Allow`, 400 for a path that does
    /// not decode. (`.found` only reaches here for a method the server cannot read: see
    /// `beginUnrecognizedLine`.)
    static func unroutedAnswer(_ match: Router.Match, method: HTTPMethod, path: String) -> HTTPResponse {
        switch match {
        case .notFound:
            return .problem(Problem(.notFound, detail: "no resource at \(path)"))
        case .badPath:
            return .problem(Problem(.malformedRequest, detail: "path is not valid percent-encoded UTF-8"))
        case .methodNotAllowed(let allow):
            var response = HTTPResponse.problem(Problem(.methodNotAllowed, detail: "\(method) is not allowed on \(path)"))
            response.headers.set("Allow", allow.map(\.rawValue).joined(separator: ", "))
            return response
        case .found:
            return .problem(Problem(.malformedRequest, detail: "\(method) requests cannot be read by this server"))
        }
    }

    /// Answers a request before its body (404, 405, 400). Skipping an unread body is unsafe to
    /// guess at, so a request with a body also ends the connection.
    private func answerAtHead(_ responder: Responder, _ head: RequestHead, _ response: HTTPResponse) -> Bool {
        if head.hasBody {
            responder.keepAlive = false
            connection.acceptingRequests = false
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
        connection.clock.deadlines.bodyProgressed(at: connection.clock.now)
        if inbound!.received > inbound!.maxBody {
            let current = inbound!
            abandonInbound(.tooLarge(limit: current.maxBody))
            connection.acceptingRequests = false
            current.responder.keepAlive = false
            current.responder.respond(.problem(Problem(.payloadTooLarge, detail: "request body exceeds the limit of \(current.maxBody) bytes")))
            connection.socket.pause(.closing)
            connection.finishIfDone()
            return false
        }
        if let body = inbound!.bodyStream {
            body.deliver(bytes)
        } else if inbound!.request != nil {
            inbound!.request!.body.append(contentsOf: bytes)
        }
        return connection.isOpen
    }

    func parserCompletedMessage() {
        if let current = inbound {
            inbound = nil
            if let body = current.bodyStream {
                body.end()
            } else if let request = current.request, let handler = current.handler {
                handler(request, current.responder)
            }
            if !current.responder.keepAlive { connection.acceptingRequests = false }
            startHandlerClock(current.responder)
        }
        if !connection.acceptingRequests || !connection.isOpen {
            parser.pause()
            connection.socket.hold(.closing)
            connection.finishIfDone()
        } else if connection.responses.count >= connection.limits.maxPipelinedRequests
                    || connection.socket.output.total >= connection.limits.writeHighWaterMark {
            parser.pause()
            connection.socket.hold(.pipeline)
        }
    }

    /// The handler now has everything it will get; from here it has `handlerTimeout` to answer.
    private func startHandlerClock(_ responder: Responder) {
        guard responder.state == .waiting, !responder.closed, let timeout = responder.handlerTimeout else { return }
        let clock = connection.clock
        responder.handlerDeadline = ConnectionDeadlines.after(clock.now, timeout.milliseconds)
        clock.arm(responder.handlerDeadline)
    }

    // MARK: methods http_parser does not know

    /// http_parser refused the method of a request starting here; `rest` is what followed in this
    /// read. The head's clock runs from the method's first byte.
    private func beginUnrecognizedLine(rest: UnsafeRawBufferPointer) {
        let clock = connection.clock
        if !parser.inMessage { clock.arm(clock.deadlines.headBegan(at: clock.now)) }
        unrecognizedLine = UnrecognizedRequestLine(prefix: parser.refusedMethodPrefix, limit: connection.limits.maxHeaderBytes)
        readUnrecognizedLine(rest)
    }

    /// Reads more of that request line; once it is whole, answers it from the routes and closes.
    private func readUnrecognizedLine(_ bytes: UnsafeRawBufferPointer) {
        guard var line = unrecognizedLine else { return }
        let outcome = line.append(bytes)
        unrecognizedLine = line
        switch outcome {
        case .incomplete:
            return
        case .malformed:
            unrecognizedLine = nil
            connection.answerAndClose(.malformedRequest, "malformed request: invalid HTTP method")
        case .tooLong:
            unrecognizedLine = nil
            connection.answerAndClose(.headersTooLarge, "request head exceeds \(connection.limits.maxHeaderBytes) bytes")
        case .line(let line):
            unrecognizedLine = nil
            let method = HTTPMethod(rawValue: line.method)
            let path = HTTPRequest(method: method, target: line.target).path
            let match = connection.server.router.match(method, path: path)
            connection.answerAndClose(Self.unroutedAnswer(match, method: method, path: path), method: method, path: path)
        }
    }
}
