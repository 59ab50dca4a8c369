/// How packd accepts `Authorization: Bearer <JWT>` from an OpenID Connect provider
/// (`--oidc-issuer`, `--oidc-audience`, `--oidc-tenant-claim`, `--oidc-role-claim`).
public struct OIDCSettings: Sendable, Equatable {
    /// The issuer exactly as its tokens' `iss` and its discovery document's `issuer` write it.
    public var issuer: String
    /// What a token's `aud` must include.
    public var audience: String
    /// The claim naming the caller's tenant (a tenant slug). Operators may go without.
    public var tenantClaim: String
    /// The claim naming the role: `read`, `write`, `admin` or `operator`, or an array of them
    /// (the highest counts; other values are ignored, as an identity provider's groups may be).
    public var roleClaim: String
    /// Seconds of clock difference tolerated for `exp`, `nbf` and `iat`.
    public var clockSkew: Int64
    /// The least time (seconds) between two fetches of the issuer's keys. A token with an unknown
    /// `kid` starts a fetch at most this often, whatever the number of such tokens.
    public var minimumRefetchInterval: Double
    /// Keys older than this (seconds) are fetched again in the background.
    public var keysMaximumAge: Double
    /// Verified tokens kept (by their SHA-256) until they expire.
    public var cacheCapacity: Int
    /// Longer tokens are refused unread.
    public var maximumTokenLength: Int

    public init(issuer: String, audience: String, tenantClaim: String = "packd_tenant", roleClaim: String = "packd_role",
                clockSkew: Int64 = 60, minimumRefetchInterval: Double = 30, keysMaximumAge: Double = 3_600,
                cacheCapacity: Int = 10_000, maximumTokenLength: Int = 8_192) {
        self.issuer = issuer
        self.audience = audience
        self.tenantClaim = tenantClaim
        self.roleClaim = roleClaim
        self.clockSkew = clockSkew
        self.minimumRefetchInterval = minimumRefetchInterval
        self.keysMaximumAge = keysMaximumAge
        self.cacheCapacity = cacheCapacity
        self.maximumTokenLength = maximumTokenLength
    }

    /// Why these settings cannot work (naming the option), or nil. The issuer must be `https://`;
    /// plain `http://` is allowed only to a loopback host (tests, a local provider).
    public var problem: String? {
        guard let scheme = Self.scheme(of: issuer) else { return "--oidc-issuer must be an absolute http(s) URL" }
        if scheme == "http", !Self.isLoopback(issuer) {
            return "--oidc-issuer must use https (http is allowed only to 127.0.0.1, [::1] or localhost)"
        }
        if audience.isEmpty { return "--oidc-audience must not be empty" }
        if tenantClaim.isEmpty || roleClaim.isEmpty { return "--oidc-tenant-claim and --oidc-role-claim must not be empty" }
        if clockSkew < 0 || clockSkew > 600 { return "the clock skew must be 0 to 600 seconds" }
        return nil
    }

    /// The discovery document's URL (OpenID Connect Discovery 1.0 §4).
    public var discoveryURL: String {
        (issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer) + "/.well-known/openid-configuration"
    }

    static func scheme(of url: String) -> String? {
        let lower = url.lowercased()
        if lower.hasPrefix("https://"), lower.count > 8 { return "https" }
        if lower.hasPrefix("http://"), lower.count > 7 { return "http" }
        return nil
    }

    static func isLoopback(_ url: String) -> Bool {
        let lower = url.lowercased()
        return ["http://127.0.0.1", "http://[::1]", "http://localhost"].contains { prefix in
            lower.hasPrefix(prefix) && [":", "/", nil].contains(lower.dropFirst(prefix.count).first.map(String.init))
        }
    }
}
