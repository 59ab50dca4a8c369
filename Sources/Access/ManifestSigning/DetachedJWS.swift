import Cryptography
import Foundation

/// A compact JWS with a detached payload (RFC 7515 §7.2.1 and appendix F) signed with Ed25519
/// (`alg: EdDSA`, RFC 8037): `<protected header>..<signature>`, both base64url, the middle (the
/// payload) left empty because the payload is the HTTP body that carries it. packd puts it in the
/// `Signature` header of `updates` answers; a device re-inserts the base64url of the exact body
/// bytes between the dots and verifies the result as an ordinary compact JWS with the tenant's
/// public key from its JWKS (`GET /v1/tenants/{id}/manifest-keys`).
///
/// The signing input is `BASE64URL(header) || '.' || BASE64URL(body)` (RFC 7515 §5.1); the payload
/// stays base64url-encoded (no RFC 7797 `b64: false`), so every JOSE library verifies it as is.
public enum DetachedJWS {
    /// The protected header, written the same way every time: `{"alg":"EdDSA","kid":"…"}`.
    static func header(kid: String) -> String {
        #"{"alg":"EdDSA","kid":\#(jsonString(kid))}"#
    }

    /// `text` as a JSON string (quoted, escaped).
    static func jsonString(_ text: String) -> String {
        // Encoding a String cannot fail.
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    /// The detached JWS of `body` with `key`, whose key id is `kid`.
    public static func sign(_ body: some Collection<UInt8>, key: Ed25519.PrivateKey, kid: String) throws(CryptographyError) -> String {
        let encodedHeader = Base64URL.encode(Array(header(kid: kid).utf8))
        let input = Array("\(encodedHeader).\(Base64URL.encode(body))".utf8)
        return "\(encodedHeader)..\(Base64URL.encode(try key.signature(for: input)))"
    }

    /// Why a detached JWS does not verify.
    public enum VerificationError: Error, Equatable, Sendable, CustomStringConvertible {
        case malformed(String)
        case algorithm(String)
        case unknownKey(String)
        case signature

        public var description: String {
            switch self {
            case .malformed(let reason): "not a detached compact JWS: \(reason)"
            case .algorithm(let alg): "the JWS algorithm must be EdDSA, not '\(alg.prefix(32))'"
            case .unknownKey(let kid): "no manifest key has the id '\(kid.prefix(64))'"
            case .signature: "the signature does not match the body"
            }
        }
    }

    /// Checks `jws` over `body` with the key of its `kid` among `keys` (kid → public key). Returns the kid.
    @discardableResult
    public static func verify(_ jws: String, body: some Collection<UInt8>, keys: [String: Ed25519.PublicKey]) throws(VerificationError) -> String {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("three parts separated by dots are needed") }
        guard parts[1].isEmpty else { throw .malformed("the payload part must be empty (detached)") }
        guard let headerBytes = Base64URL.decode(parts[0]),
              let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any] else {
            throw .malformed("the protected header is not base64url JSON")
        }
        guard let alg = header["alg"] as? String else { throw .malformed("the header has no 'alg'") }
        guard alg == "EdDSA" else { throw .algorithm(alg) }
        // A critical extension packd does not know must be refused (RFC 7515 §4.1.11).
        guard header["crit"] == nil else { throw .malformed("the header has 'crit' extensions") }
        guard let kid = header["kid"] as? String else { throw .malformed("the header has no 'kid'") }
        guard let key = keys[kid] else { throw .unknownKey(kid) }
        guard let signature = Base64URL.decode(parts[2]) else { throw .malformed("the signature is not base64url") }
        let input = Array("\(parts[0]).\(Base64URL.encode(body))".utf8)
        guard key.isValidSignature(signature, for: input) else { throw .signature }
        return kid
    }
}
