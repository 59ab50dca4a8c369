/// Every bound the server puts on a client, in one place so the CLI can expose them all and tests
/// can shrink them. Each comment names the answer a client gets when it crosses the bound.
public struct ServerLimits: Sendable, Equatable {
    /// Request line plus header fields, in bytes. Beyond it: 431, then close.
    public var maxHeaderBytes: Int = 16 * 1024
    /// Request body, in bytes, unless a route overrides it. Beyond it: 413 as soon as the
    /// `Content-Length` (or the running chunked total) says so, then close.
    public var maxBodyBytes: Int = 1024 * 1024
    /// From a request's first byte until its head is complete. Beyond it: 408, then close.
    public var headerTimeout: Duration = .seconds(10)
    /// Longest silence while a body is being received. Beyond it: 408, then close.
    public var bodyTimeout: Duration = .seconds(30)
    /// A keep-alive connection with nothing in flight is closed after this long.
    public var idleTimeout: Duration = .seconds(60)
    /// A response that makes no write progress for this long (a client that stopped reading)
    /// gets its connection closed.
    public var writeTimeout: Duration = .seconds(60)
    /// Open connections. Beyond it: 503, then close.
    public var maxConnections: Int = 4096
    /// Requests parsed ahead of their responses on one connection; beyond it reading pauses
    /// until responses drain, so a pipelining client cannot make the server queue without bound.
    public var maxPipelinedRequests: Int = 32
    /// Bytes queued for a connection's socket above which a streaming writer is told to wait
    /// (`ResponseStream.canWrite == false`) and reading of further requests pauses.
    public var writeHighWaterMark: Int = 256 * 1024
    /// After an error answer (400, 413, 431, 408) the server keeps discarding input this long
    /// before closing, so the client reads the answer instead of a connection reset.
    public var lingerTimeout: Duration = .seconds(2)
    /// At most this many bytes are discarded while lingering, so "without reading the whole
    /// body" holds for a client that keeps sending.
    public var maxLingerBytes: Int = 256 * 1024
    /// From a request's last byte until its handler answers (or starts streaming). Beyond it: 503
    /// `unavailable`, the connection carries on, and a late answer is dropped. A bug or a stuck
    /// dependency then costs one request, not a connection wedged behind it. `nil`: no bound.
    /// `RouteOptions.handlerTimeout` overrides it per route; a started stream is never cut.
    public var handlerTimeout: Duration? = .seconds(60)
    /// How long graceful shutdown waits for in-flight responses before closing them anyway.
    public var shutdownGracePeriod: Duration = .seconds(10)
    /// Whether file bodies (artifacts, exports) go from the page cache to the socket with
    /// sendfile(2). Off, they are read through one 64 KiB buffer a download, as they are anyway
    /// from a file system that has no sendfile.
    public var sendfile = true

    public init() {}
}

extension Duration {
    /// Whole milliseconds, clamped to what a uv timer accepts; negative durations become zero.
    var milliseconds: UInt64 {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        let (scaled, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1000)
        if overflow { return UInt64.max / 2 }
        return scaled + UInt64(attoseconds / 1_000_000_000_000_000)
    }
}
