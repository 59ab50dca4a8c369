/// Limits and rules for all upstream traffic of one process.
public struct FetchConfiguration: Sendable {
    /// Transfers in flight at once, over all hosts.
    public var maxTransfers: Int
    /// Transfers in flight at once to one `scheme://host:port`; the rest wait in packd's own queue.
    public var maxTransfersPerHost: Int
    /// Optional politeness: new requests per second to one host.
    public var requestsPerSecondPerHost: Double?
    /// Redirect hops followed per request (each re-checked by `addressPolicy` and the rules).
    public var maxRedirects: Int
    public var addressPolicy: AddressPolicy
    public var rules: [UpstreamRule]

    public init(maxTransfers: Int = 64, maxTransfersPerHost: Int = 16, requestsPerSecondPerHost: Double? = nil,
                maxRedirects: Int = 5, addressPolicy: AddressPolicy = AddressPolicy(), rules: [UpstreamRule] = []) {
        self.maxTransfers = max(1, min(maxTransfers, 10_000))
        self.maxTransfersPerHost = max(1, min(maxTransfersPerHost, self.maxTransfers))
        self.requestsPerSecondPerHost = requestsPerSecondPerHost.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        self.maxRedirects = max(0, min(maxRedirects, 5))
        self.addressPolicy = addressPolicy
        self.rules = rules
    }
}
