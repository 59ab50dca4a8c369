/// Configuration for one upstream: requests whose canonical URL starts with `prefix` get
/// credentials (headers, query parameters) or a different base URL on the wire, and the host they
/// go to a politeness policy. Callers, the database and every log line see only the canonical URL;
/// the rule is applied at the last moment and undone on everything handed back.
public struct UpstreamRule: Sendable, Equatable {
    public var prefix: String
    public var headers: [Field]
    public var queryItems: [Field]
    /// When set, `prefix` is replaced by this on the wire (a mirror, an internal gateway).
    public var rewrittenPrefix: String?
    /// Concurrency and rate for the host these URLs go to (see `HostPolicy`).
    public var policy: HostPolicy

    /// A header or query parameter the rule adds.
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(prefix: String, headers: [Field] = [], queryItems: [Field] = [], rewrittenPrefix: String? = nil,
                policy: HostPolicy = HostPolicy()) {
        self.prefix = prefix
        self.headers = headers
        self.queryItems = queryItems
        self.rewrittenPrefix = rewrittenPrefix
        self.policy = policy
    }

    /// The secrets this rule adds, for redacting any text that might echo them.
    var secrets: [String] {
        (headers.map(\.value) + queryItems.map(\.value)).filter { $0.utf8.count >= 4 }
    }
}

/// The configured rules, matched longest prefix first.
public struct UpstreamRules: Sendable {
    public let rules: [UpstreamRule]
    /// The rules that set any policy field, longest prefix first (usually none or a few: every
    /// request looks them up).
    private let policyRules: [UpstreamRule]

    public init(_ rules: [UpstreamRule] = []) {
        self.rules = rules.sorted { $0.prefix.utf8.count > $1.prefix.utf8.count }
        policyRules = self.rules.filter { !$0.policy.isEmpty }
    }

    /// The policy for a canonical URL: each field from the longest matching prefix that sets it,
    /// so a credentials rule for `https://tiles.example/private/` keeps the limit a rule for
    /// `https://tiles.example/` set.
    func policy(for canonical: String) -> HostPolicy {
        var policy = HostPolicy()
        for rule in policyRules where canonical.hasPrefix(rule.prefix) {
            policy.inherit(rule.policy)
        }
        return policy
    }

    /// The largest `max_transfers` any rule sets (the connection pool must allow it).
    var largestMaxTransfers: Int? { policyRules.compactMap(\.policy.maxTransfers).max() }

    /// What goes on the wire for a canonical URL.
    struct WireRequest {
        var url: String
        var headers: [UpstreamRule.Field]
    }

    func wire(for canonical: String) -> WireRequest {
        guard let rule = rules.first(where: { canonical.hasPrefix($0.prefix) }) else {
            return WireRequest(url: canonical, headers: [])
        }
        var url = canonical
        if let rewritten = rule.rewrittenPrefix {
            url = rewritten + url.dropFirst(rule.prefix.count)
        }
        if !rule.queryItems.isEmpty {
            let (base, fragment) = Self.splitFragment(url)
            let added = rule.queryItems.map { "\(Self.percentEncode($0.name))=\(Self.percentEncode($0.value))" }
            url = base + (base.contains("?") ? "&" : "?") + added.joined(separator: "&") + fragment
        }
        return WireRequest(url: url, headers: rule.headers)
    }

    /// The canonical form of a URL seen on the wire (a redirect target, curl's effective URL):
    /// the rewrite undone and every query parameter a rule adds removed — also when an upstream
    /// echoes it into a redirect to another of its paths.
    func canonical(forWire wire: String) -> String {
        var url = wire
        if let rule = rules.first(where: { $0.rewrittenPrefix.map(url.hasPrefix) ?? false }),
           let rewritten = rule.rewrittenPrefix {
            url = rule.prefix + url.dropFirst(rewritten.count)
        }
        let injected = Set(rules.flatMap { $0.queryItems.map { Self.percentEncode($0.name) } })
        guard !injected.isEmpty, let question = url.firstIndex(of: "?") else { return url }
        let (withoutFragment, fragment) = Self.splitFragment(url)
        let query = withoutFragment[withoutFragment.index(after: question)...]
        let kept = query.split(separator: "&", omittingEmptySubsequences: false).filter { pair in
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            return !injected.contains(String(name))
        }
        let base = String(withoutFragment[..<question])
        return (kept.isEmpty ? base : base + "?" + kept.joined(separator: "&")) + fragment
    }

    /// Replaces every configured secret in `text`; the last line of defence for error details.
    public func redact(_ text: String) -> String {
        var result = text
        for secret in rules.flatMap(\.secrets) {
            result = result.replacing(secret, with: "[redacted]")
            let encoded = Self.percentEncode(secret)
            if encoded != secret { result = result.replacing(encoded, with: "[redacted]") }
        }
        return result
    }

    private static func splitFragment(_ url: String) -> (String, String) {
        guard let hash = url.firstIndex(of: "#") else { return (url, "") }
        return (String(url[..<hash]), String(url[hash...]))
    }

    /// RFC 3986 unreserved characters pass; everything else is %XX, so a token can never break
    /// out of its query parameter.
    static func percentEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0xf)])
            }
        }
        return out
    }
}
