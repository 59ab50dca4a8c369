/// How packd treats one upstream host, set per URL prefix in the upstream rules file: a public
/// server held to a couple of transfers, a private CDN let run wide. Unset fields fall back to a
/// shorter matching prefix, then to the server-wide settings.
public struct HostPolicy: Sendable, Equatable {
    /// Transfers in flight to the host at most; the adaptive limit stays at or below it.
    public var maxTransfers: Int?
    /// New requests per second to the host at most.
    public var requestsPerSecond: Double?
    /// `false`: no adaptive limit, always `maxTransfers` (or the server-wide per-host setting).
    public var adaptive: Bool?
    /// Speak HTTP/2 to a plain `http://` host without asking first (h2c "prior knowledge").
    /// curl negotiates HTTP/2 only through TLS (ALPN); over plain HTTP it would otherwise use
    /// HTTP/1.1, one connection per transfer. A host that does not speak h2c fails every request.
    public var http2PriorKnowledge: Bool?

    public init(maxTransfers: Int? = nil, requestsPerSecond: Double? = nil, adaptive: Bool? = nil,
                http2PriorKnowledge: Bool? = nil) {
        self.maxTransfers = maxTransfers
        self.requestsPerSecond = requestsPerSecond
        self.adaptive = adaptive
        self.http2PriorKnowledge = http2PriorKnowledge
    }

    public var isEmpty: Bool { self == HostPolicy() }

    /// Fills the fields still unset from `other` (a shorter prefix's rule).
    mutating func inherit(_ other: HostPolicy) {
        maxTransfers = maxTransfers ?? other.maxTransfers
        requestsPerSecond = requestsPerSecond ?? other.requestsPerSecond
        adaptive = adaptive ?? other.adaptive
        http2PriorKnowledge = http2PriorKnowledge ?? other.http2PriorKnowledge
    }

    /// The stricter of two policies for one host (two prefixes on the same host, or a rewrite
    /// onto it): the lower cap and rate, non-adaptive if either says so.
    func tightened(by other: HostPolicy) -> HostPolicy {
        HostPolicy(maxTransfers: Self.lower(maxTransfers, other.maxTransfers),
                   requestsPerSecond: Self.lower(requestsPerSecond, other.requestsPerSecond),
                   adaptive: adaptive == false || other.adaptive == false ? false : adaptive ?? other.adaptive,
                   http2PriorKnowledge: http2PriorKnowledge == true || other.http2PriorKnowledge == true ? true : nil)
    }

    private static func lower<T: Comparable>(_ a: T?, _ b: T?) -> T? {
        switch (a, b) {
        case let (a?, b?): min(a, b)
        case let (a?, nil): a
        case let (nil, b): b
        }
    }
}
