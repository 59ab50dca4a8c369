import Foundation
import JWTKit

/// The issuer's public keys as jwt-kit verifiers, by `kid`, each pinned to the one algorithm its
/// key type allows: RSA → RS256, EC P-256 → ES256, OKP Ed25519 → EdDSA. A token's `alg` must be
/// its key's, so no token can choose how its key is used (an RSA public key is never an HMAC
/// secret). Immutable: a fetch makes a new set.
///
/// Made with jwt-kit's `JWTKeyCollection`, an actor, so making a set is `async`; that happens
/// once per fetch of the JWKS, off the loop. Verifying is synchronous: `JWTAlgorithm.verify`.
public struct IssuerKeySet: Sendable {
    public enum Algorithm: String, Sendable, CaseIterable {
        case rs256 = "RS256"
        case es256 = "ES256"
        case edDSA = "EdDSA"
    }

    struct Key: Sendable {
        let kid: String
        let algorithm: Algorithm
        let verifier: any JWTAlgorithm
    }

    /// Bounds on what an issuer may send.
    public static let maximumDocumentBytes = 256 << 10
    public static let maximumKeys = 64
    /// RSA keys shorter than this (bits) are skipped (NIST SP 800-131A).
    public static let minimumRSABits = 2048

    let keys: [String: Key]
    /// Why keys of the document were left out (for the log): `kid: reason`.
    public let skipped: [String]

    public static let empty = IssuerKeySet(keys: [:], skipped: [])

    public var kids: [String] { keys.keys.sorted() }
    public var isEmpty: Bool { keys.isEmpty }

    public func algorithm(of kid: String) -> Algorithm? { keys[kid]?.algorithm }

    /// The verifier for a token's `kid` (or, when the token names none, the only key the issuer has).
    func key(for kid: String?) -> Key? {
        if let kid { return keys[kid] }
        return keys.count == 1 ? keys.first?.value : nil
    }

    /// Why a JWKS document is unusable as a whole.
    public struct DocumentError: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The usable keys of the JWKS document `body` (RFC 7517 §5). Keys of other types, curves or
    /// uses (`enc`), private keys, short RSA keys and keys without `kid` are skipped, not fatal: an
    /// issuer's set may hold keys for other purposes.
    public static func make(jwks body: [UInt8]) async throws(DocumentError) -> IssuerKeySet {
        guard body.count <= maximumDocumentBytes else { throw DocumentError(description: "the JWKS is over \(maximumDocumentBytes) bytes") }
        guard let document = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let entries = document["keys"] as? [Any] else {
            throw DocumentError(description: "the JWKS is not a JSON object with a 'keys' array")
        }
        guard entries.count <= maximumKeys else { throw DocumentError(description: "the JWKS holds more than \(maximumKeys) keys") }
        let collection = JWTKeyCollection()
        var keys: [String: Key] = [:]
        var skipped: [String] = []
        for entry in entries {
            guard let fields = entry as? [String: Any] else { skipped.append("?: not an object"); continue }
            let kid = fields["kid"] as? String
            switch candidate(fields) {
            case .failure(let reason):
                skipped.append("\(kid?.prefix(64) ?? "?"): \(reason)")
            case .success(let algorithm):
                guard let kid, keys[kid] == nil else { skipped.append("\(kid?.prefix(64) ?? "?"): no kid, or a repeated one"); continue }
                do {
                    let jwk = try JSONDecoder().decode(JWK.self, from: JSONSerialization.data(withJSONObject: fields))
                    try await collection.add(jwk: jwk)
                    // Asked by kid, with the pinned algorithm: jwt-kit never falls back to another key.
                    let verifier = try await collection.getKey(for: JWKIdentifier(string: kid), alg: algorithm.rawValue)
                    guard verifier.name == algorithm.rawValue else { skipped.append("\(kid.prefix(64)): jwt-kit made \(verifier.name)"); continue }
                    keys[kid] = Key(kid: kid, algorithm: algorithm, verifier: verifier)
                } catch {
                    skipped.append("\(kid.prefix(64)): jwt-kit refused the key")
                }
            }
        }
        return IssuerKeySet(keys: keys, skipped: skipped)
    }

    /// The algorithm a JWK's type allows, or why it is not usable for verifying tokens.
    static func candidate(_ fields: [String: Any]) -> Result<Algorithm, KeyProblem> {
        if let use = fields["use"], use as? String != "sig" { return .failure(.use) }
        if fields["d"] != nil { return .failure(.privateKey) }
        let algorithm: Algorithm
        switch (fields["kty"] as? String, fields["crv"] as? String) {
        case ("RSA", _):
            guard let n = (fields["n"] as? String).flatMap(Base64URL.decode), let e = fields["e"] as? String, !e.isEmpty else {
                return .failure(.material)
            }
            let significant = n.drop { $0 == 0 }
            let bits = significant.count * 8 - (significant.first.map { $0.leadingZeroBitCount } ?? 0)
            guard bits >= minimumRSABits else { return .failure(.shortRSA(bits)) }
            algorithm = .rs256
        case ("EC", "P-256"):
            algorithm = .es256
        case ("OKP", "Ed25519"):
            algorithm = .edDSA
        default:
            return .failure(.type)
        }
        if let alg = fields["alg"], alg as? String != algorithm.rawValue { return .failure(.algorithm) }
        return .success(algorithm)
    }

    enum KeyProblem: Error, CustomStringConvertible {
        case use, privateKey, material, shortRSA(Int), type, algorithm

        var description: String {
            switch self {
            case .use: "not a signing key (use)"
            case .privateKey: "a private key has no place in a JWKS"
            case .material: "RSA modulus or exponent missing"
            case .shortRSA(let bits): "an RSA key of \(bits) bits (at least \(IssuerKeySet.minimumRSABits))"
            case .type: "a key type or curve other than RSA, EC P-256 and OKP Ed25519"
            case .algorithm: "its 'alg' is not the one its type allows here (RS256, ES256, EdDSA)"
            }
        }
    }
}
