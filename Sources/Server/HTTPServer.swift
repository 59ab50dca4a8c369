import CUV
import Glibc
import Logging
import Loop

/// An HTTP/1.1 server on one libuv loop: accepts connections, hands requests to the router,
/// enforces `ServerLimits`, and shuts down gracefully. Create, start and stop it on the loop thread
/// (checked in debug builds).
///
/// ```swift
/// var router = Router()
/// router.get("/v1/packs/{id}") { request, responder in
///     responder.respond(.json(["id": request.parameters["id"] ?? ""]))
/// }
/// let server = HTTPServer(loop: loop, router: router, limits: ServerLimits(), logger: logger)
/// let bound = try server.start(listeningOn: .loopback(port: 0))   // bound.port: the real port
/// // later, on the loop thread:
/// server.shutdown { loop.stop() }
/// ```
public final class HTTPServer: LoopHandleOwner {
    public let loop: EventLoop
    public let limits: ServerLimits
    public let logger: Logger
    let accessLog: AccessLog
    /// Emptied once shutdown has finished: handlers often keep what they were handed (a parked
    /// `Responder`, an event subscription), and a responder keeps its connection, which keeps
    /// this server, which kept the handlers — a cycle that outlived every server stopped while
    /// a handler still held one (LeakSanitizer, `make sanitize`).
    private(set) var router: Router

    private var listener: UnsafeMutablePointer<uv_tcp_t>?
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    private var rejecting = 0
    private var dateCache = HTTPDateCache()
    private var shutdownCompletion: (() -> Void)?
    private var graceTimer: LoopTimer?
    private var acceptFailures = AcceptFailureLog()
    /// The `X-Request-Id` of every request this server reads.
    var requestIDs = RequestIDs()
    /// One read buffer for every connection: reads are consumed synchronously on the loop thread.
    let readBuffer: uv_buf_t

    /// The address actually bound (with the kernel's port when asked for port 0).
    public private(set) var localAddress: ListenAddress?
    /// Bytes read from all connections since start; lets tests wait until the server has
    /// consumed what they sent, so a split request really arrives in separate reads.
    var receivedBytes = 0
    /// File bodies since start by the way they went: sendfile(2), or reads through a buffer
    /// (`ServerLimits.sendfile` off, or a file sendfile refused); and the windows of sendfile
    /// bodies that were not in the page cache and were read in on the thread pool first. Tests
    /// tell the paths apart by them.
    var fileBodies = FileBodyCounts()

    struct FileBodyCounts: Equatable {
        var sendfile = 0
        var reads = 0
        var windowsReadIn = 0
    }

    /// Accepts that failed or came within a few descriptors of RLIMIT_NOFILE, since start.
    public var failedAccepts: Int { acceptFailures.total }

    /// True from `shutdown` on; `/readyz` answers 503 from then.
    public private(set) var isShuttingDown = false

    public init(loop: EventLoop, router: Router, limits: ServerLimits = ServerLimits(), logger: Logger = Logger(label: "packd.server")) {
        self.loop = loop
        self.router = router
        self.limits = limits
        self.logger = logger
        accessLog = AccessLog(logger: logger)
        let size = 64 * 1024
        readBuffer = uv_buf_init(UnsafeMutablePointer<CChar>.allocate(capacity: size), UInt32(size))
    }

    deinit {
        readBuffer.base?.deallocate()
    }

    /// Open connections, including ones being told 503.
    public var connectionCount: Int { connections.count }

    /// Bytes handed to libuv and not yet written to sockets, over all connections: what a slow
    /// reader can make the server hold.
    public var queuedBytes: Int { connections.values.reduce(0) { $0 + $1.queuedBytes } }

    /// Requests read whose responses are not complete, over all connections.
    public var pendingResponses: Int { connections.values.reduce(0) { $0 + $1.pendingResponses } }

    /// Binds and starts accepting. Returns the bound address.
    @discardableResult
    public func start(listeningOn address: ListenAddress) throws -> ListenAddress {
        loop.assertInLoopThread()
        guard listener == nil, !isShuttingDown else { throw UVError(UV_EALREADY.rawValue, "start: already started") }
        // libuv writes with write(2): a peer that closed would raise SIGPIPE and kill the whole
        // process (tests included) instead of returning EPIPE. Linux has no per-socket opt-out.
        SignalWatcher.ignoreSIGPIPE()
        let handle = allocateHandle(uv_tcp_t.self, owner: self)
        try UVError.check(uv_tcp_init(loop.raw, handle), "uv_tcp_init")
        listener = handle
        var storage = address.sockaddr()
        let stream = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self)
        do {
            try withUnsafePointer(to: &storage) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddr in
                    _ = try UVError.check(uv_tcp_bind(handle, sockaddr, 0), "bind \(address)")
                }
            }
            try UVError.check(uv_listen(stream, 4096) { stream, status in
                handleOwner(stream, as: HTTPServer.self).accept(status)
            }, "listen \(address)")
        } catch {
            listener = nil
            closeHandle(handle)
            throw error
        }
        var bound = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let port: Int = withUnsafeMutablePointer(to: &bound) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddr in
                guard uv_tcp_getsockname(handle, sockaddr, &length) == 0 else { return address.port }
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        }
        let actual = address.withPort(port)
        localAddress = actual
        return actual
    }

    private func accept(_ status: Int32) {
        guard let listener, !isShuttingDown else { return }
        guard status >= 0 else {
            // What libuv could not absorb itself (see AcceptFailureLog): say so, keep serving.
            acceptFailures.record(status, now: uv_now(loop.raw), logger: logger)
            return
        }
        let connection: HTTPConnection
        do {
            connection = try HTTPConnection(server: self)
        } catch {
            acceptFailures.record((error as? UVError)?.code ?? UV_EINVAL.rawValue, now: uv_now(loop.raw), logger: logger)
            return
        }
        let listenerStream = UnsafeMutableRawPointer(listener).assumingMemoryBound(to: uv_stream_t.self)
        let accepted = uv_accept(listenerStream, connection.stream)
        guard accepted == 0 else {
            acceptFailures.record(accepted, now: uv_now(loop.raw), logger: logger)
            connection.close()
            return
        }
        connections[ObjectIdentifier(connection)] = connection
        var descriptor = uv_os_fd_t()
        if uv_fileno(UnsafeRawPointer(connection.stream).assumingMemoryBound(to: uv_handle_t.self), &descriptor) == 0 {
            acceptFailures.checkDescriptor(descriptor, now: uv_now(loop.raw), logger: logger)
        }
        if connections.count - rejecting > limits.maxConnections {
            // Telling the client why costs a little; past a bound even that stops.
            guard rejecting < max(16, limits.maxConnections / 8) else {
                connection.close()
                return
            }
            rejecting += 1
            connection.overCapacity = true
            connection.start()
            connection.rejectOverCapacity()
            return
        }
        connection.start()
    }

    func connectionDidClose(_ connection: HTTPConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        if connection.overCapacity { rejecting -= 1 }
        if isShuttingDown && connections.isEmpty { finishShutdown() }
    }

    func currentDate() -> [UInt8] { dateCache.current() }

    /// Stops accepting, lets responses in flight finish for at most `gracePeriod` (default
    /// `limits.shutdownGracePeriod`), closes every connection, then calls `completion`.
    public func shutdown(gracePeriod: Duration? = nil, completion: @escaping () -> Void = {}) {
        loop.assertInLoopThread()
        guard !isShuttingDown else { return }
        isShuttingDown = true
        shutdownCompletion = completion
        if let listener {
            self.listener = nil
            closeHandle(listener)
        }
        for connection in Array(connections.values) { connection.beginShutdown() }
        if connections.isEmpty {
            finishShutdown()
            return
        }
        let timer = LoopTimer(loop: loop)
        timer.start(after: (gracePeriod ?? limits.shutdownGracePeriod).milliseconds) { [weak self] in
            guard let self else { return }
            logger.warning("shutdown grace period over: closing the connections still open", metadata: [
                "connections": .stringConvertible(connections.count),
            ])
            for connection in Array(connections.values) { connection.close() }
        }
        graceTimer = timer
    }

    private func finishShutdown() {
        graceTimer?.close()
        graceTimer = nil
        // Every connection is closed: no request is dispatched after this.
        router = Router()
        let completion = shutdownCompletion
        shutdownCompletion = nil
        completion?()
    }
}
