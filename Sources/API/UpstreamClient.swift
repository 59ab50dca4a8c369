import Packs

/// Upstream access for the routes that need it (an estimate's style and TileJSONs, a read-through
/// miss). The API does not import Fetch: `packd` supplies this over the server's one fetcher, so
/// these requests obey the same address policy, upstream rules and per-host limits as downloads.
/// Loop thread only.
public protocol UpstreamClient: AnyObject {
    /// GETs the canonical `url` (no credentials: upstream rules add them on the wire). `completion`
    /// runs once, later, on the loop thread — never inside this call.
    func get(_ url: String, limits: UpstreamLimits, completion: @escaping (Result<UpstreamResponse, UpstreamFailure>) -> Void)
    /// GETs the bytes `range` of `url` with the precondition given (a PMTiles archive's header
    /// for an estimate). A server answering 200 fails with the code `range_not_supported` at the
    /// first bytes; any other answer comes back with its status and headers.
    func getRange(_ url: String, range: ClosedRange<UInt64>, ifMatch: String?, ifUnmodifiedSince: Int64?, limits: UpstreamLimits,
                  completion: @escaping (Result<UpstreamResponse, UpstreamFailure>) -> Void)
}

/// Bounds of one upstream request made for an API request.
public struct UpstreamLimits: Sendable, Equatable {
    public var maxBodyBytes: Int
    /// The whole request, connection and body included.
    public var timeout: Duration

    public init(maxBodyBytes: Int, timeout: Duration) {
        self.maxBodyBytes = maxBodyBytes
        self.timeout = timeout
    }
}

/// An upstream's answer (any status: the route decides what a 404 means).
public struct UpstreamResponse: Sendable {
    public var status: Int
    /// As received: still gzip-encoded when the upstream sent it so (`StoredBody` reads both).
    public var body: [UInt8]
    /// The caching headers, as they would be stored.
    public var cache: HTTPCacheHeaders
    /// The response headers packd reads (lower-case names): validators, `Content-Range`.
    public var headers: [String: String]

    public init(status: Int, body: [UInt8], cache: HTTPCacheHeaders = HTTPCacheHeaders(), headers: [String: String] = [:]) {
        self.status = status
        self.body = body
        self.cache = cache
        self.headers = headers
    }
}

/// Why an upstream request produced no answer.
public struct UpstreamFailure: Error, Sendable, Equatable {
    /// The server's address policy refused the host (private, loopback or link-local address).
    public var hostNotAllowed: Bool
    /// A stable snake_case reason (`timeout`, `connect_failed`, `too_large`…), never a URL.
    public var code: String

    public init(code: String, hostNotAllowed: Bool = false) {
        self.code = code
        self.hostNotAllowed = hostNotAllowed
    }
}

/// Where the routes find the upstream client: `packd` sets it once its fetcher exists; without
/// one (tests of the API alone) routes that need the upstream answer 503.
final class UpstreamAccess {
    var client: (any UpstreamClient)?
}
