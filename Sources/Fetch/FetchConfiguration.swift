/// Limits and rules for all upstream traffic of one process.
public struct FetchConfiguration: Sendable {
    /// Transfers in flight at once, over all hosts.
    public var maxTransfers: Int
    /// Transfers in flight at once to one `scheme://host:port`, when set (the operator's explicit
    /// cap; a rule's `max_transfers` overrides it for its host). The adaptive limit stays at or
    /// below it. Nil: each host's ceiling is its protocol's (`limiter`). The rest wait in packd's
    /// own queue.
    public var maxTransfersPerHost: Int?
    /// Optional politeness: new requests per second to one host.
    public var requestsPerSecondPerHost: Double?
    /// Redirect hops followed per request (each re-checked by `addressPolicy` and the rules).
    public var maxRedirects: Int
    public var addressPolicy: AddressPolicy
    public var rules: [UpstreamRule]
    /// The adaptive per-host limit's start, ceilings and sensitivity.
    public var limiter: HostConcurrencyLimiter.Settings
    /// A PEM file of CA certificates trusted for upstream TLS in addition to the system's.
    public var caFile: String?

    /// A host's limit when a rule turns adaptation off without giving `max_transfers` and no
    /// per-host setting is made: the fixed default packd had before the limit adapted.
    public static let fixedTransfersPerHost = 16

    public init(maxTransfers: Int = 512, maxTransfersPerHost: Int? = nil, requestsPerSecondPerHost: Double? = nil,
                maxRedirects: Int = 5, addressPolicy: AddressPolicy = AddressPolicy(), rules: [UpstreamRule] = [],
                limiter: HostConcurrencyLimiter.Settings = .init(), caFile: String? = nil) {
        let maxTransfers = max(1, min(maxTransfers, 10_000))
        self.maxTransfers = maxTransfers
        self.maxTransfersPerHost = maxTransfersPerHost.map { max(1, min($0, maxTransfers)) }
        self.requestsPerSecondPerHost = requestsPerSecondPerHost.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        self.maxRedirects = max(0, min(maxRedirects, 5))
        self.addressPolicy = addressPolicy
        self.rules = rules
        self.limiter = limiter
        self.caFile = caFile
    }

    /// The most transfers one host can be allowed: what curl's per-host connection cap must make
    /// room for while an HTTP/1.1 host (a connection per transfer) is busy.
    var largestHostLimit: Int { largestLimit(protocolCeilings: [limiter.http1Maximum, limiter.http2Maximum]) }

    /// HTTP/2 streams packd runs on one connection (curl takes the smaller of this and the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS), so a host at its ceiling of 100 gets 4
    /// connections and a spare rather than one. The reason is the client's CPU: libcurl (7.88,
    /// Debian 12) runs *every* transfer on a connection each time its socket is readable
    /// (`multi_socket`), and each but the first polls the socket again, so the cost of an event
    /// grows with the streams sharing the connection. On a 2-core machine 100 streams on one
    /// connection cost packd ~500 µs of CPU per 22 KiB tile against ~420 µs on connections of 25
    /// (`packd-bench download-wan`), and its loop thread, not the network, set the pace. A few
    /// connections also spread a lost packet's head-of-line stall over a quarter of the streams.
    public static let streamsPerConnection = 25

    /// The most transfers one HTTP/2 host can be allowed.
    var largestHTTP2Limit: Int { largestLimit(protocolCeilings: [limiter.http2Maximum]) }

    /// The largest explicit cap or protocol ceiling, within the overall cap.
    private func largestLimit(protocolCeilings: [Int]) -> Int {
        let explicit = [maxTransfersPerHost, UpstreamRules(rules).largestMaxTransfers].compactMap { $0 }
        return min((explicit + protocolCeilings).max() ?? 1, maxTransfers)
    }

    /// curl's per-host connection cap (`CURLMOPT_MAX_HOST_CONNECTIONS`, one number for the whole
    /// multi handle). While only HTTP/2 hosts are busy: the connections their largest limit needs at
    /// `streamsPerConnection`, and one spare (a connection the server is closing with GOAWAY still
    /// holds its slot until its streams end). Without it libcurl before 8.0 opens a new
    /// connection for every transfer that finds the others full while one is still connecting —
    /// 8 to 31 connections that served one request each, in the benchmark. While a host that is
    /// on HTTP/1.1 or not yet known is busy: its limit, a connection per transfer.
    func hostConnectionCap(onlyHTTP2HostsBusy: Bool) -> Int {
        guard onlyHTTP2HostsBusy else { return largestHostLimit }
        let streams = Self.streamsPerConnection
        return (largestHTTP2Limit + streams - 1) / streams + 1
    }
}
