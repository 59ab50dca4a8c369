@testable import Access
import Cryptography
import Foundation
import Testing

@Suite struct ManifestSigningTests {
    @Test func signsByteForByteAsTheReferenceLibraries() throws {
        // Python's `cryptography` signed these with the same seed, header and body; jwcrypto
        // computed the kid (RFC 7638) and verified each. Ed25519 is deterministic, so packd's
        // detached JWS must be the very same text.
        let document = try Vectors.json("manifests")
        let key = try Ed25519.PrivateKey(seed: Vectors.bytes(hex: try #require(document["seed"] as? String)))
        let ring = ManifestKeyRing(signing: .init(privateKey: key, createdAt: 0))
        #expect(ring.signing.kid == document["kid"] as? String)
        #expect(Base64URL.encode(key.publicKey.rawRepresentation) == document["public"] as? String)
        let manifests = try #require(document["manifests"] as? [[String: String]])
        #expect(manifests.count == 3)
        for manifest in manifests {
            let body = Array(try #require(manifest["body"]).utf8)
            let jws = try #require(manifest["jws"])
            #expect(try ring.signature(for: body) == jws)
            #expect(try DetachedJWS.verify(jws, body: body, keys: ring.verificationKeys(now: 0)) == ring.signing.kid)
        }
    }

    @Test func failsWithAnyByteChanged() throws {
        let ring = try ManifestKeyRing.generate(now: 0)
        let body = Array(#"{"pack":42,"versions":[{"version":3,"sha256":"00ff"}]}"#.utf8)
        let jws = try ring.signature(for: body)
        let keys = ring.verificationKeys(now: 0)
        for index in body.indices {
            var altered = body
            altered[index] ^= 0x01
            #expect(throws: DetachedJWS.VerificationError.signature) { try DetachedJWS.verify(jws, body: altered, keys: keys) }
        }
        #expect(throws: DetachedJWS.VerificationError.signature) { try DetachedJWS.verify(jws, body: body + [0x20], keys: keys) }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        #expect(throws: DetachedJWS.VerificationError.malformed("the payload part must be empty (detached)")) {
            try DetachedJWS.verify("\(parts[0]).\(Base64URL.encode(body)).\(parts[2])", body: body, keys: keys)
        }
        let noneHeader = Base64URL.encode(Array(#"{"alg":"none","kid":"\#(ring.signing.kid)"}"#.utf8))
        #expect(throws: DetachedJWS.VerificationError.algorithm("none")) { try DetachedJWS.verify("\(noneHeader)..", body: body, keys: keys) }
        #expect(throws: DetachedJWS.VerificationError.unknownKey("other")) {
            try DetachedJWS.verify(try DetachedJWS.sign(body, key: Ed25519.PrivateKey(), kid: "other"), body: body, keys: keys)
        }
    }

    @Test func rotationKeepsThePreviousKeyListedForTheGracePeriod() throws {
        var ring = try ManifestKeyRing.generate(now: 1_000, gracePeriod: 100)
        let body = Array("{}".utf8)
        let oldSignature = try ring.signature(for: body)
        let oldKid = ring.signing.kid
        try ring.rotate(to: Ed25519.PrivateKey(), now: 2_000)
        #expect(ring.signing.kid != oldKid)
        #expect(ring.listedKeys(now: 2_050).map(\.kid) == [ring.signing.kid, oldKid])
        // A manifest signed before the rotation still verifies through the grace period…
        #expect(try DetachedJWS.verify(oldSignature, body: body, keys: ring.verificationKeys(now: 2_099)) == oldKid)
        // …and not after it.
        #expect(throws: DetachedJWS.VerificationError.unknownKey(oldKid)) {
            try DetachedJWS.verify(oldSignature, body: body, keys: ring.verificationKeys(now: 2_100))
        }
        let jwks = try #require(try JSONSerialization.jsonObject(with: Data(ring.jwks(now: 2_050))) as? [String: [[String: String]]])
        let keys = try #require(jwks["keys"])
        #expect(keys.map { $0["kid"] } == [ring.signing.kid, oldKid])
        for key in keys {
            #expect(key["kty"] == "OKP" && key["crv"] == "Ed25519" && key["use"] == "sig" && key["alg"] == "EdDSA")
            #expect(key["d"] == nil)
            #expect(Base64URL.decode(try #require(key["x"]))?.count == 32)
        }
        try ring.rotate(to: Ed25519.PrivateKey(), now: 2_200)
        #expect(ring.retired.count == 1, "the first key's grace period ended: pruned")
        #expect(ring.listedKeys(now: 2_200).count == 2)
    }

    @Test func thumbprintFollowsRFC7638() throws {
        // RFC 8037 appendix A.3: the thumbprint of the RFC 8032 test key 1.
        let key = try Ed25519.PublicKey(rawRepresentation: Vectors.bytes(hex: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"))
        #expect(JWKS.thumbprint(of: key) == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
    }
}
