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

    /// The most transfers one host can be allowed: what curl's per-host connection cap (HTTP/1.1
    /// needs a connection per transfer) and per-connection stream cap must make room for.
    var largestHostLimit: Int {
        let configured = [maxTransfersPerHost, UpstreamRules(rules).largestMaxTransfers, limiter.http1Maximum,
                          limiter.http2Maximum].compactMap { $0 }.max() ?? 1
        return min(configured, maxTransfers)
    }
}
