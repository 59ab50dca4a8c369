import Foundation

/// What packd reads of the issuer's discovery document (OpenID Connect Discovery 1.0 §3): its
/// `issuer`, which must be exactly the configured one (§4.3, so a document from elsewhere cannot
/// name other keys), and `jwks_uri`, on the issuer's scheme.
struct IssuerMetadata: Equatable {
    static let maximumDocumentBytes = 64 << 10

    let jwksURI: String

    /// Why a discovery document is unusable.
    struct Problem: Error, Equatable {
        let reason: String
    }

    static func parse(_ body: [UInt8], expectedIssuer: String) -> Result<IssuerMetadata, Problem> {
        guard body.count <= maximumDocumentBytes else { return .failure(Problem(reason: "the discovery document is over \(maximumDocumentBytes) bytes")) }
        guard let document = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure(Problem(reason: "the discovery document is not a JSON object"))
        }
        guard let issuer = document["issuer"] as? String, issuer == expectedIssuer else {
            return .failure(Problem(reason: "the discovery document's issuer is not \(expectedIssuer)"))
        }
        guard let jwksURI = document["jwks_uri"] as? String, jwksURI.utf8.count <= 2048,
              OIDCSettings.scheme(of: jwksURI) == OIDCSettings.scheme(of: expectedIssuer),
              OIDCSettings.scheme(of: jwksURI) == "https" || OIDCSettings.isLoopback(jwksURI) else {
            return .failure(Problem(reason: "the discovery document has no jwks_uri on the issuer's scheme"))
        }
        return .success(IssuerMetadata(jwksURI: jwksURI))
    }
}
