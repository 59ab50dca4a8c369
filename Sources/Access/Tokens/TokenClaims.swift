import Foundation
import JWTKit

/// The claims packd reads from a verified token, decoded with jwt-kit's claim types (NumericDate
/// as Unix seconds, `aud` as a string or an array), and every other top-level claim that is a
/// string or an array of strings — so the tenant and role claims can be named in configuration.
struct TokenClaims: Decodable {
    var issuer: IssuerClaim?
    var subject: SubjectClaim?
    var audience: AudienceClaim?
    var expiration: ExpirationClaim?
    var notBefore: NotBeforeClaim?
    var issuedAt: IssuedAtClaim?
    /// Other string (or string array) claims, by name; at most `maximumClaims`.
    var strings: [String: [String]] = [:]

    static let maximumClaims = 64

    private struct Name: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Name.self)
        issuer = try container.decodeIfPresent(IssuerClaim.self, forKey: Name(stringValue: "iss"))
        subject = try container.decodeIfPresent(SubjectClaim.self, forKey: Name(stringValue: "sub"))
        audience = try container.decodeIfPresent(AudienceClaim.self, forKey: Name(stringValue: "aud"))
        expiration = try container.decodeIfPresent(ExpirationClaim.self, forKey: Name(stringValue: "exp"))
        notBefore = try container.decodeIfPresent(NotBeforeClaim.self, forKey: Name(stringValue: "nbf"))
        issuedAt = try container.decodeIfPresent(IssuedAtClaim.self, forKey: Name(stringValue: "iat"))
        for key in container.allKeys.prefix(Self.maximumClaims) where !["iss", "sub", "aud", "exp", "nbf", "iat"].contains(key.stringValue) {
            if let value = try? container.decode(String.self, forKey: key) {
                strings[key.stringValue] = [value]
            } else if let values = try? container.decode([String].self, forKey: key) {
                strings[key.stringValue] = values
            }
        }
    }

    /// Decodes `payload` (the JSON bytes) with jwt-kit's decoder.
    static func decode(_ payload: [UInt8]) throws -> TokenClaims {
        try TokenVerifier.decoder.decode(TokenClaims.self, from: Data(payload))
    }
}
