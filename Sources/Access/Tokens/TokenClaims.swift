import Foundation
import JWTKit

/// The claims packd reads from a verified token, decoded with jwt-kit's claim types (NumericDate
/// as Unix seconds, `aud` as a string or an array), and the claims configuration names (tenant,
/// role) as a string or an array of strings.
struct TokenClaims: Decodable {
    var issuer: IssuerClaim?
    var subject: SubjectClaim?
    var audience: AudienceClaim?
    var expiration: ExpirationClaim?
    var notBefore: NotBeforeClaim?
    var issuedAt: IssuedAtClaim?
    /// The named claims that are a string (or an array of strings), by name.
    var strings: [String: [String]] = [:]

    /// Where the decoder's `userInfo` holds the names of the claims to read into `strings`.
    static let namesKey = CodingUserInfoKey(rawValue: "packd.claimNames")!

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
        for name in decoder.userInfo[Self.namesKey] as? [String] ?? [] {
            let key = Name(stringValue: name)
            if let value = try? container.decode(String.self, forKey: key) {
                strings[name] = [value]
            } else if let values = try? container.decode([String].self, forKey: key) {
                strings[name] = values
            }
        }
    }

    /// A decoder like jwt-kit's (`JSONDecoder.defaultForJWT`: NumericDate as Unix seconds) that
    /// also reads the claims `names`.
    static func decoder(reading names: [String]) -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        decoder.userInfo[namesKey] = names
        return decoder
    }
}
