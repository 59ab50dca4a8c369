import Cryptography
import Foundation
import JWTKit
import Packs

/// A verified bearer token: the caller it makes, and until when it may be taken as verified.
public struct VerifiedToken: Sendable, Equatable {
    public let principal: Principal
    /// Unix seconds until which the token is accepted (`exp` plus the clock skew).
    public let acceptedUntil: Int64
    public let kid: String
}

/// What checking a token against a key set found.
public enum TokenVerification: Sendable, Equatable {
    case verified(VerifiedToken)
    /// The token names a key the set lacks: fetch the keys again (rate limited), then retry.
    case unknownKey(String?)
    case refused(TokenRefusal)
}

/// Checks a compact JWS bearer token synchronously: jwt-kit splits it and decodes its header and
/// claims, and its key (`IssuerKeySet`) verifies the signature; packd's policy is here — RS256,
/// ES256 and EdDSA only (`none` and every HMAC algorithm refused before any key is looked at), the
/// token's `alg` equal to its key's, `exp` required and `nbf`/`iat` checked with the clock skew,
/// `iss` equal to the issuer, `aud` including the audience, `sub` required, the tenant and role
/// from the configured claims. The signature is checked before the claims are decoded.
public struct TokenVerifier: Sendable {
    public let settings: OIDCSettings
    /// jwt-kit's decoder for headers, made once.
    static let headerDecoder: any JWTJSONDecoder = JSONDecoder.defaultForJWT
    /// The claims decoder, reading the configured tenant and role claims too.
    private let claimsDecoder: JSONDecoder

    public init(settings: OIDCSettings) {
        self.settings = settings
        claimsDecoder = TokenClaims.decoder(reading: [settings.tenantClaim, settings.roleClaim])
    }

    public func verify(_ token: some StringProtocol, keys: IssuerKeySet, now: Int64) -> TokenVerification {
        guard token.utf8.count <= settings.maximumTokenLength else { return .refused(.malformed("longer than \(settings.maximumTokenLength) bytes")) }
        let bytes = Array(token.utf8)
        let parts: (header: ArraySlice<UInt8>, payload: ArraySlice<UInt8>, signature: ArraySlice<UInt8>)
        do {
            parts = try DefaultJWTParser().getTokenParts(bytes)
        } catch {
            return .refused(.malformed("three base64url parts separated by dots are needed"))
        }
        guard let headerJSON = Base64URL.decode(String(decoding: parts.header, as: UTF8.self)),
              let header = try? Self.headerDecoder.decode(JWTHeader.self, from: Data(headerJSON)) else {
            return .refused(.malformed("the header is not base64url JSON"))
        }
        guard let alg = header.alg else { return .refused(.malformed("the header has no 'alg'")) }
        guard let algorithm = IssuerKeySet.Algorithm(rawValue: alg) else { return .refused(.algorithm(alg)) }
        // Any `crit`, whatever its form, names extensions packd does not implement (RFC 7515 §4.1.11).
        guard header.fields["crit"] == nil else { return .refused(.malformed("the header has 'crit' extensions")) }
        guard let key = keys.key(for: header.kid) else { return .unknownKey(header.kid) }
        guard key.algorithm == algorithm else { return .refused(.keyMismatch) }
        guard let signature = Base64URL.decode(String(decoding: parts.signature, as: UTF8.self)) else {
            return .refused(.malformed("the signature is not base64url"))
        }
        let signingInput = bytes[..<(parts.payload.endIndex)]
        guard (try? key.verifier.verify(signature, signs: signingInput)) == true else { return .refused(.signature) }
        guard let payload = Base64URL.decode(String(decoding: parts.payload, as: UTF8.self)),
              let claims = try? claimsDecoder.decode(TokenClaims.self, from: Data(payload)) else {
            return .refused(.malformed("the claims are not base64url JSON with valid registered claims"))
        }
        switch principal(from: claims, now: now) {
        case .success(let (principal, expires)):
            return .verified(VerifiedToken(principal: principal, acceptedUntil: expires + settings.clockSkew, kid: key.kid))
        case .failure(let refusal):
            return .refused(refusal)
        }
    }

    /// The registered claims checked, then the caller they name.
    private func principal(from claims: TokenClaims, now: Int64) -> Result<(Principal, Int64), TokenRefusal> {
        let skew = Double(settings.clockSkew)
        let date = Date(timeIntervalSince1970: Double(now))
        guard let expiration = claims.expiration else { return .failure(.missingClaim("exp")) }
        // jwt-kit's checks, with the skew moved into the time they compare against.
        guard (try? expiration.verifyNotExpired(currentDate: date.addingTimeInterval(-skew))) != nil else { return .failure(.expired) }
        if let notBefore = claims.notBefore, (try? notBefore.verifyNotBefore(currentDate: date.addingTimeInterval(skew))) == nil {
            return .failure(.notYetValid)
        }
        if let issuedAt = claims.issuedAt, issuedAt.value > date.addingTimeInterval(skew) { return .failure(.issuedInTheFuture) }
        guard let issuer = claims.issuer else { return .failure(.missingClaim("iss")) }
        guard issuer.value == settings.issuer else { return .failure(.issuer) }
        guard let audience = claims.audience else { return .failure(.missingClaim("aud")) }
        guard (try? audience.verifyIntendedAudience(includes: settings.audience)) != nil else { return .failure(.audience) }
        guard let subject = claims.subject?.value, !subject.isEmpty else { return .failure(.missingClaim("sub")) }
        guard let roles = claims.strings[settings.roleClaim] else { return .failure(.missingClaim(settings.roleClaim)) }
        guard let role = roles.compactMap({ Role(name: $0) }).max() else { return .failure(.invalidClaim(settings.roleClaim)) }
        let tenant: TenantID
        if let values = claims.strings[settings.tenantClaim] {
            guard values.count == 1, let id = TenantID(values[0]) else { return .failure(.invalidClaim(settings.tenantClaim)) }
            tenant = id
        } else if role == .operator {
            tenant = .default
        } else {
            return .failure(.missingClaim(settings.tenantClaim))
        }
        let expires = Int64(expiration.value.timeIntervalSince1970.rounded(.down))
        // The subject can be long and is the issuer's; the bucket's name is a digest of it.
        let bucket = "sub:" + String(Base64URL.encode(Cryptography.SHA256.hash(Array(subject.utf8))).prefix(22))
        return .success((Principal(tenant: tenant, role: role, actor: .token(subject: subject), rateLimitKey: bucket), expires))
    }
}
