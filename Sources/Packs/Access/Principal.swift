/// Who is calling, once the HTTP edge has checked a key, a device link or a token: the only thing
/// routes and stores see of a credential. Small and copied freely.
public struct Principal: Sendable, Equatable {
    /// How the caller proved who it is; what events and the audit log record as the actor.
    public enum Actor: Sendable, Equatable {
        /// A key made through the API (or the keys file: its line as the name).
        case key(id: String, name: String)
        /// A bearer token from the OpenID Connect issuer: its `sub`.
        case token(subject: String)
        /// A signed device link of `pack` (no key at all).
        case deviceLink(pack: PackID)
        /// No keys are configured: the server listens on loopback only and trusts its callers.
        case loopback
    }

    /// The tenant the caller acts in. For an operator, the tenant its key or token names (the
    /// `default` tenant when none); its role reaches above it.
    public let tenant: TenantID
    public let role: Role
    public let actor: Actor
    /// The packs the caller may reach, or nil for every pack of its tenant.
    public let packs: Set<PackID>?
    /// Whose token bucket a request takes from (`key:<id>`, `sub:<digest of the subject>`,
    /// `link:<pack>:<digest of the signature>`): never a credential, so it can name a bucket in
    /// memory, a log line or a metric.
    public let rateLimitKey: String

    public init(tenant: TenantID, role: Role, actor: Actor, packs: Set<PackID>? = nil, rateLimitKey: String) {
        self.tenant = tenant
        self.role = role
        self.actor = actor
        self.packs = packs
        self.rateLimitKey = rateLimitKey
    }

    /// Whether the caller's role reaches `required`.
    public func allows(_ required: Role) -> Bool { role >= required }

    /// Whether `pack` is within the caller's pack restriction (its tenant is the store's check).
    public func mayReach(pack: PackID) -> Bool { packs?.contains(pack) ?? true }

    public var isOperator: Bool { role == .operator }
}
