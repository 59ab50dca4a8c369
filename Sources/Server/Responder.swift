import CUV
import Logging
import Loop

/// The answer side of one request. A handler calls `respond` or `stream` exactly once, now or
/// later; the server writes answers strictly in request order whatever order handlers finish in.
///
/// Loop thread only, like everything the server owns (checked in debug builds). Work finished on another thread comes back
/// with `respondFromAnyThread` (or `loop.execute`). It is `Sendable` only so it can travel to that
/// thread and back; touching it there is a bug.
public final class Responder: @unchecked Sendable {
    enum State {
        case waiting
        case streaming
        case finished
    }

    let connection: HTTPConnection
    /// The loop this responder belongs to.
    public let loop: EventLoop
    public let method: HTTPMethod
    public let path: String
    /// The request's `X-Request-Id` (the client's, or one the server made): echoed on the
    /// response and logged with the access line.
    public let requestID: String
    let version: HTTPVersion
    /// False when the connection ends after this response (client asked, error, shutdown).
    var keepAlive: Bool
    let startedAt: UInt64
    var state = State.waiting
    /// Bytes produced while an earlier response is still being written.
    var pending: [UInt8] = []
    /// Everything of this response has been produced (not necessarily written yet).
    var complete = false
    var status = 0
    var bodyBytes = 0
    var stream: ResponseStream?
    /// The file body being sent by sendfile, from `ResponseStream.sendFile` until the answer ends.
    var transfer: SendfileTransfer?
    var closed = false
    /// The route's bound on the handler; the clock starts when the request is fully read.
    var handlerTimeout: Duration?
    /// `uv_now` by which the handler must answer; 0 while not running.
    var handlerDeadline: UInt64 = 0

    /// Called once if the answer is given up before this response is complete (client gone,
    /// shutdown deadline, handler timeout). Long-running work can stop when it fires.
    public var onClose: (() -> Void)?

    init(connection: HTTPConnection, head: RequestHead, path: String, requestID: String, keepAlive: Bool) {
        self.connection = connection
        loop = connection.loop
        method = head.method
        self.path = path
        self.requestID = requestID
        version = head.version
        self.keepAlive = keepAlive
        startedAt = uv_hrtime()
    }

    /// Whether an answer can still reach the client.
    public var isOpen: Bool { !closed && state != .finished }

    /// Sends a complete response. Later calls are ignored: a request has one answer.
    public func respond(_ response: HTTPResponse) {
        loop.assertInLoopThread()
        guard state == .waiting, !closed else { return }
        state = .finished
        status = response.status.code
        connection.responses.send(response, for: self)
    }

    /// Hops to the loop thread and responds there; safe from any thread.
    public func respondFromAnyThread(_ response: HTTPResponse) {
        loop.execute { [self] in respond(response) }
    }

    /// Starts a streaming response. Without `contentLength` the body is sent chunked (HTTP/1.1)
    /// or delimited by closing the connection (HTTP/1.0).
    public func stream(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), contentLength: Int? = nil) -> ResponseStream {
        loop.assertInLoopThread()
        let framing: BodyFraming
        if let contentLength {
            framing = .length(max(0, contentLength))
        } else if version.minor == 0 {
            framing = .untilClose
            keepAlive = false
        } else {
            framing = .chunked
        }
        let stream = ResponseStream(responder: self, framing: framing, omitBody: method == .head)
        guard state == .waiting, !closed else {
            stream.finished = true
            return stream
        }
        state = .streaming
        self.stream = stream
        self.status = status.code
        connection.responses.startStream(status: status, headers: headers, framing: framing, for: self)
        return stream
    }

    /// Drops the connection without (finishing) an answer: what a crashing upstream does. For
    /// fault-injecting test servers, and for giving up on a client that must not get a reply.
    public func abortConnection() {
        guard !closed else { return }
        connection.abort()
    }

    /// Whether the server has begun graceful shutdown: a readiness check answers 503 from then on.
    public var serverIsShuttingDown: Bool { connection.server.isShuttingDown }

    /// The handler missed `handlerTimeout`: the client gets a 503 problem in this request's place
    /// (so later pipelined answers are not stuck behind it), and the handler's work is told to stop.
    func handlerDidTimeOut() {
        guard state == .waiting, !closed, let handlerTimeout else { return }
        connection.server.logger.warning("a handler did not answer in time: answering 503", metadata: [
            "method": .string(method.rawValue),
            "path": .string(AccessLog.loggedPath(path)),
            "request_id": .string(requestID),
            "handler_timeout_ms": .stringConvertible(handlerTimeout.milliseconds),
        ])
        let callback = onClose
        onClose = nil
        respond(.problem(Problem(.unavailable, detail: "the request was not answered within \(handlerTimeout)")))
        callback?()
    }

    /// The connection went away before this response was complete.
    func connectionDidClose() {
        guard !closed else { return }
        closed = true
        let wasComplete = complete
        let callback = onClose
        onClose = nil
        stream?.onWritable = nil
        transfer?.cancel()
        if !wasComplete { callback?() }
        retire()
    }

    /// The response is written or abandoned: lets go of the stream (which holds this responder)
    /// and of the close callback (which may hold the stream). Without this every streamed response
    /// stayed in a responder ⇄ stream cycle, keeping its connection — and through it the server
    /// and every route — alive. A producer still holding the stream keeps only the stream.
    func retire() {
        onClose = nil
        stream = nil
        transfer = nil
    }
}
