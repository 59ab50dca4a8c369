/// An API key as a store keeps it: never the secret, only its SHA-256 (`Access.APIKey`). What
/// `GET /v1/keys` lists, and what turns a presented key into a `Principal`.
public struct KeyRecord: Sendable, Equatable {
    public static let maximumNameLength = 200

    /// The key's public id (`DELETE /v1/keys/{id}`), not derived from the secret.
    public var id: String
    public var tenant: TenantID
    public var role: Role
    /// A label the admin chose ("fleet devices, 2026").
    public var name: String
    /// SHA-256 of the whole key text.
    public var secretDigest: [UInt8]
    /// Unix seconds.
    public var createdAt: Int64
    /// Unix seconds after which the key is refused; nil: never.
    public var expiresAt: Int64?
    /// The packs the key may reach; nil: every pack of its tenant.
    public var packs: Set<PackID>?
    /// Unix seconds of the latest request with the key, written in batches (so up to a batch late).
    public var lastUsedAt: Int64?

    public init(id: String, tenant: TenantID, role: Role, name: String, secretDigest: [UInt8], createdAt: Int64,
                expiresAt: Int64? = nil, packs: Set<PackID>? = nil, lastUsedAt: Int64? = nil) {
        self.id = id
        self.tenant = tenant
        self.role = role
        self.name = name
        self.secretDigest = secretDigest
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.packs = packs
        self.lastUsedAt = lastUsedAt
    }

    /// Whether the key is refused at `now` because it expired (at `expiresAt` itself it still works).
    public func isExpired(at now: Int64) -> Bool {
        expiresAt.map { now > $0 } ?? false
    }

    /// The caller this key makes, or nil once it has expired.
    public func principal(at now: Int64) -> Principal? {
        guard !isExpired(at: now) else { return nil }
        return Principal(tenant: tenant, role: role, actor: .key(id: id, name: name), packs: packs, rateLimitKey: "key:\(id)")
    }

    /// Why `name` cannot label a key, or nil: 1 to 200 characters, no control characters.
    public static func problem(withName name: String) -> String? {
        guard !name.isEmpty, name.count <= maximumNameLength else { return "a key's name must be 1 to \(maximumNameLength) characters" }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return "a key's name must not contain control characters"
        }
        return nil
    }
}
