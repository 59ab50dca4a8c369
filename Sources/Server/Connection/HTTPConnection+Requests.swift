import Loop

/// Requests: a parsed head routed (or answered at once), its body collected or streamed, the
/// handler's clock, and parsing paused while too many answers are outstanding (pipelining).
/// http_parser calls these through `RequestParser`.
extension HTTPConnection {
    func parserBeganMessage() {
        armTimer(deadlines.headBegan(at: now))
    }

    func parserCompletedHead(_ head: RequestHead) -> Bool {
        guard acceptingRequests else { return false }
        var request = HTTPRequest(method: head.method, target: head.target, headers: head.headers, version: head.version)
        request.requestID = server.requestIDs.id(offered: head.headers[RequestIDs.headerName])
        let responder = Responder(connection: self, head: head, path: request.path, requestID: request.requestID,
                                  keepAlive: head.keepAlive && !server.isShuttingDown)
        slots.append(responder)
        deadlines.bodyProgressed(at: now)
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
        if head.hasBody { armTimer(ConnectionDeadlines.after(now, deadlines.bodyTimeout)) }
        return phase == .open
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
        deadlines.bodyProgressed(at: now)
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
        } else if slots.count >= limits.maxPipelinedRequests || output.total >= limits.writeHighWaterMark {
            parser.pause()
            paused.insert(.pipeline)
        }
    }

    /// The handler now has everything it will get; from here it has `handlerTimeout` to answer.
    private func startHandlerClock(_ responder: Responder) {
        guard responder.state == .waiting, !responder.closed, let timeout = responder.handlerTimeout else { return }
        responder.handlerDeadline = ConnectionDeadlines.after(now, timeout.milliseconds)
        armTimer(responder.handlerDeadline)
    }

    /// Parsing resumes once the client's earlier responses have drained.
    func resumePipelineIfPossible() {
        guard !parsing, phase == .open, paused.contains(.pipeline), acceptingRequests,
              slots.count < limits.maxPipelinedRequests, output.queuedBytes < limits.writeHighWaterMark / 2
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

    // MARK: methods http_parser does not know

    /// http_parser refused the method of a request starting here; `rest` is what followed in this
    /// read. The head's clock runs from the method's first byte.
    func beginUnrecognizedLine(rest: UnsafeRawBufferPointer) {
        if !parser.inMessage { armTimer(deadlines.headBegan(at: now)) }
        unrecognizedLine = UnrecognizedRequestLine(prefix: parser.refusedMethodPrefix, limit: limits.maxHeaderBytes)
        readUnrecognizedLine(rest)
    }

    /// Reads more of that request line; once it is whole, answers it from the routes and closes.
    func readUnrecognizedLine(_ bytes: UnsafeRawBufferPointer) {
        guard var line = unrecognizedLine else { return }
        let outcome = line.append(bytes)
        unrecognizedLine = line
        switch outcome {
        case .incomplete:
            return
        case .malformed:
            unrecognizedLine = nil
            answerAndClose(.malformedRequest, "malformed request: invalid HTTP method")
        case .tooLong:
            unrecognizedLine = nil
            answerAndClose(.headersTooLarge, "request head exceeds \(limits.maxHeaderBytes) bytes")
        case .line(let line):
            unrecognizedLine = nil
            let method = HTTPMethod(rawValue: line.method)
            let path = HTTPRequest(method: method, target: line.target).path
            let match = server.router.match(method, path: path)
            answerAndClose(Self.unroutedAnswer(match, method: method, path: path), method: method, path: path)
        }
    }
}
