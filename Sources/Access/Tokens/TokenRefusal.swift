/// Why a bearer token was refused (`401`). Names the check, never the token.
public enum TokenRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    /// `none`, an HMAC algorithm, or anything but RS256, ES256 and EdDSA.
    case algorithm(String)
    /// No key of the issuer has this `kid` (after a fetch, or while fetches are rate limited).
    case unknownKey(String?)
    /// The key's algorithm is not the token's: an RSA key asked to check an ES256 token.
    case keyMismatch
    case signature
    case expired
    case notYetValid
    case issuedInTheFuture
    case issuer
    case audience
    case missingClaim(String)
    case invalidClaim(String)
    /// The issuer's keys could not be fetched and none are known.
    case keysUnavailable

    /// A stable name for logs, metrics and tests: `algorithm`, `unknown_key`, `expired`, ….
    public var code: String {
        switch self {
        case .malformed: "malformed"
        case .algorithm: "algorithm"
        case .unknownKey: "unknown_key"
        case .keyMismatch: "key_mismatch"
        case .signature: "signature"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .issuedInTheFuture: "issued_in_the_future"
        case .issuer: "issuer"
        case .audience: "audience"
        case .missingClaim: "missing_claim"
        case .invalidClaim: "invalid_claim"
        case .keysUnavailable: "keys_unavailable"
        }
    }

    public var description: String {
        switch self {
        case .malformed(let reason): "the bearer token is not a JWT: \(reason)"
        case .algorithm(let alg): "the token's algorithm '\(alg.prefix(16))' is not accepted (RS256, ES256 and EdDSA are)"
        case .unknownKey(let kid): "no key of the issuer has the id '\((kid ?? "").prefix(64))'"
        case .keyMismatch: "the token's algorithm does not match its key"
        case .signature: "the token's signature does not verify"
        case .expired: "the token has expired"
        case .notYetValid: "the token is not valid yet (nbf)"
        case .issuedInTheFuture: "the token was issued in the future (iat)"
        case .issuer: "the token's issuer is not the configured one"
        case .audience: "the token is not intended for this audience"
        case .missingClaim(let name): "the token has no '\(name.prefix(64))' claim"
        case .invalidClaim(let name): "the token's '\(name.prefix(64))' claim is not valid"
        case .keysUnavailable: "the identity provider's keys are not available"
        }
    }
}
