import Cryptography
import Foundation

/// A tenant's manifest signing keys: the one that signs now, and the ones it replaced, still
/// listed in the JWKS for a grace period so a device holding a manifest signed just before a
/// rotation (or a CDN's cached copy) still verifies it. A pure value: the store keeps the keys
/// (their seeds sealed, `SecretEnvelope`), the route asks it for the JWKS and signatures.
public struct ManifestKeyRing: Sendable {
    /// One Ed25519 key and when it stopped signing.
    public struct Key: Sendable {
        public let privateKey: Ed25519.PrivateKey
        /// The RFC 7638 thumbprint of the public JWK: derived from the key, the same everywhere.
        public let kid: String
        /// Unix seconds.
        public let createdAt: Int64
        /// Unix seconds when a newer key replaced it; nil for the signing key.
        public var retiredAt: Int64?

        public init(privateKey: Ed25519.PrivateKey, createdAt: Int64, retiredAt: Int64? = nil) {
            self.privateKey = privateKey
            self.kid = JWKS.thumbprint(of: privateKey.publicKey)
            self.createdAt = createdAt
            self.retiredAt = retiredAt
        }
    }

    /// How long a replaced key stays listed (seconds). Default 30 days: longer than any manifest
    /// a device fetched before the rotation needs to stay checkable on its way through caches.
    public let gracePeriod: Int64
    public private(set) var signing: Key
    /// Replaced keys, newest first.
    public private(set) var retired: [Key]

    public init(signing: Key, retired: [Key] = [], gracePeriod: Int64 = 30 * 86_400) {
        self.signing = signing
        self.retired = retired.sorted { ($0.retiredAt ?? 0) > ($1.retiredAt ?? 0) }
        self.gracePeriod = gracePeriod
    }

    /// A ring with a new key.
    public static func generate(now: Int64, gracePeriod: Int64 = 30 * 86_400) throws(CryptographyError) -> ManifestKeyRing {
        ManifestKeyRing(signing: Key(privateKey: try Ed25519.PrivateKey(), createdAt: now), gracePeriod: gracePeriod)
    }

    /// Makes `newKey` the signing key; the old one stays listed until `now + gracePeriod`.
    public mutating func rotate(to newKey: Ed25519.PrivateKey, now: Int64) {
        var old = signing
        old.retiredAt = now
        retired.insert(old, at: 0)
        signing = Key(privateKey: newKey, createdAt: now)
        prune(now: now)
    }

    /// Drops retired keys whose grace period has ended.
    public mutating func prune(now: Int64) {
        let listed = retired.filter { isListed($0, now: now) }
        retired = listed
    }

    private func isListed(_ key: Key, now: Int64) -> Bool {
        guard let retiredAt = key.retiredAt else { return true }
        return now < retiredAt + gracePeriod
    }

    /// The signing key and the retired keys still in their grace period, signing key first.
    public func listedKeys(now: Int64) -> [Key] {
        [signing] + retired.filter { isListed($0, now: now) }
    }

    /// The `Signature` header value for `body`: a detached JWS by the signing key.
    public func signature(for body: some Collection<UInt8>) throws(CryptographyError) -> String {
        try DetachedJWS.sign(body, key: signing.privateKey, kid: signing.kid)
    }

    /// The public JWKS document (`application/jwk-set+json`).
    public func jwks(now: Int64) -> [UInt8] {
        JWKS.document(listedKeys(now: now).map(\.privateKey.publicKey))
    }

    /// kid → public key of the listed keys, for `DetachedJWS.verify`.
    public func verificationKeys(now: Int64) -> [String: Ed25519.PublicKey] {
        Dictionary(listedKeys(now: now).map { ($0.kid, $0.privateKey.publicKey) }, uniquingKeysWith: { first, _ in first })
    }
}

/// JSON Web Key Sets (RFC 7517) of Ed25519 public keys (RFC 8037 §2: `kty: OKP`, `crv: Ed25519`,
/// `x` the raw key in base64url), each with its RFC 7638 thumbprint as `kid`.
public enum JWKS {
    /// The public JWK of `key`, members in a fixed order.
    static func jwk(_ key: Ed25519.PublicKey) -> String {
        let x = Base64URL.encode(key.rawRepresentation)
        return #"{"kty":"OKP","crv":"Ed25519","x":"\#(x)","kid":"\#(thumbprint(of: key))","use":"sig","alg":"EdDSA"}"#
    }

    /// `{"keys":[…]}`.
    public static func document(_ keys: [Ed25519.PublicKey]) -> [UInt8] {
        Array(#"{"keys":[\#(keys.map(jwk).joined(separator: ","))]}"#.utf8)
    }

    /// RFC 7638: base64url(SHA-256) of the required members in lexicographic order, no whitespace
    /// — for an OKP key `{"crv":"Ed25519","kty":"OKP","x":"…"}`.
    public static func thumbprint(of key: Ed25519.PublicKey) -> String {
        let members = #"{"crv":"Ed25519","kty":"OKP","x":"\#(Base64URL.encode(key.rawRepresentation))"}"#
        return Base64URL.encode(SHA256.hash(members.utf8))
    }
}
