@testable import Access
import Cryptography
import Fetch
import Foundation
import Loop
import Packs
import PackdTestSupport
import Testing

/// `make verify-access`: with `PACKD_ACCESS_INTEROP_DIR` set, scripts/verify_access.py runs an
/// identity provider on 127.0.0.1 with fresh keys and tokens minted by PyJWT and jwcrypto (in
/// `minted.json`); this suite authenticates each through the real `OIDCAuthenticator` (discovery,
/// JWKS, jwt-kit), floods it with unknown `kid`s, then writes what packd signs, links, seals and
/// makes to `packd.json` for the reference libraries to check. Skipped (and shown as skipped)
/// without the variable: `make test` has the committed vectors instead.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["PACKD_ACCESS_INTEROP_DIR"] != nil))
struct ReferenceInteropTests {
    let directory = URL(fileURLWithPath: ProcessInfo.processInfo.environment["PACKD_ACCESS_INTEROP_DIR"] ?? "/nonexistent")

    @Test func tokensMintedByReferenceLibrariesAgainstALiveIssuer() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("minted.json"))) as? [String: Any])
        let issuer = try #require(document["issuer"] as? String)
        let cases = try #require(document["cases"] as? [[String: Any]])
        let harness = try FetchHarness()
        defer { harness.close() }
        let settings = OIDCSettings(issuer: issuer, audience: try #require(document["audience"] as? String), minimumRefetchInterval: 3_600)
        // Checked at the clock the tokens were minted for: the cases 30 s inside the skew must not
        // depend on how long a loaded machine takes between minting and checking.
        let minted = try #require(document["now"] as? Int64)
        let authenticator = try harness.thread.sync {
            OIDCAuthenticator(settings: settings, loop: harness.thread.loop, fetcher: harness.fetcher, wallClock: .fixed(minted))
        }
        let answers = Answers()
        try harness.thread.sync {
            for (index, entry) in cases.enumerated() {
                authenticator.authenticate(entry["token"] as? String ?? "") { answers.record(index, $0) }
            }
        }
        try #require(eventually { answers.count == cases.count }, "every token answered")
        for (index, entry) in cases.enumerated() {
            let name = entry["name"] as? String ?? "?", expected = entry["expect"] as? String ?? "?"
            switch answers[index] {
            case .success(let principal):
                #expect(expected == "ok", "\(name): accepted, expected \(expected)")
                #expect(principal.tenant.rawValue == entry["tenant"] as? String && principal.role.name == entry["role"] as? String, "\(name)")
                print("ok      \(name): \(principal.role) in \(principal.tenant)")
            case .failure(let refusal):
                #expect(refusal.code == expected, "\(name): \(refusal)")
                print("\(refusal.code == expected ? "ok     " : "FAILED ") \(name): refused, \(refusal.code)")
            case nil:
                Issue.record("\(name): no answer")
            }
        }
        // An unknown-kid flood: a thousand tokens, at most the one fetch already made.
        let forger = try Ed25519.PrivateKey()
        let flood = try (0..<1_000).map { index -> String in
            let header = Base64URL.encode(Array(#"{"alg":"EdDSA","kid":"flood-\#(index)"}"#.utf8))
            let input = header + "." + Base64URL.encode(Array(#"{"iss":"\#(issuer)"}"#.utf8))
            return input + "." + Base64URL.encode(try forger.signature(for: Array(input.utf8)))
        }
        let floodAnswers = Answers()
        try harness.thread.sync {
            for (index, token) in flood.enumerated() { authenticator.authenticate(token) { floodAnswers.record(index, $0) } }
        }
        try #require(eventually { floodAnswers.count == flood.count }, "every flooding token answered")
        #expect(floodAnswers.all.allSatisfy { $0 == .failure(.unknownKey($0.kid)) })
        let stats = try harness.fetch(FetchRequest(url: issuer.replacingOccurrences(of: "/realms/packd", with: "/stats"))).get()
        let counts = try #require(try JSONSerialization.jsonObject(with: Data(stats.body)) as? [String: Int])
        print("issuer requests after \(cases.count) tokens and a flood of \(flood.count) unknown kids: \(counts)")
        #expect(counts["jwks"] == 1 && counts["discovery"] == 1)
    }

    @Test func writeWhatPackdMakesForTheReferenceLibraries() throws {
        let now = Int64(Date().timeIntervalSince1970)
        var ring = try ManifestKeyRing.generate(now: now - 100)
        try ring.rotate(to: Ed25519.PrivateKey(), now: now)
        let bodies: [[UInt8]] = [Array(#"{"pack":42,"versions":[{"version":3,"sha256":"9f86d0"}],"name":"Zürich ✓"}"#.utf8),
                                 Array(repeating: 0x7B, count: 1), try SecureRandom.bytes(count: 4096)]
        let manifests = try bodies.map { ["body": Data($0).base64EncodedString(), "jws": try ring.signature(for: $0)] }
        let linkSecret = try DeviceLinkSigner.generateSecret()
        let signer = try DeviceLinkSigner(secret: linkSecret)
        let links = try [("/v1/packs/42/updates", [String: String]()), ("/v1/packs/42/versions/3/export", ["format": "pmtiles"]),
                         ("/v1/packs/42/versions/3/export", ["format": "mbtiles", "since": "2"])].map { path, parameters in
            ["path": path, "query": try signer.signedQuery(path: path, parameters: parameters, expires: now + 3_600)]
        }
        let (secretsKey, secretsKeyBase64) = try SecretsKey.generate()
        let keyring = SecretsKeyring(current: secretsKey)
        let sealed = try [("webhook:17:secret", Array("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".utf8)), ("tenant:acme:link-secret", linkSecret),
                          ("empty", [])].map { context, plaintext in
            ["context": context, "plaintext": plaintext.map { String(format: "%02x", $0) }.joined(),
             "sealed": try SecretEnvelope.seal(plaintext, context: context, keyring: keyring)]
        }
        let written: [String: Any] = [
            "now": now, "manifests": manifests, "listed_keys": ring.listedKeys(now: now).count,
            "jwks": try JSONSerialization.jsonObject(with: Data(ring.jwks(now: now))),
            "link_secret": linkSecret.map { String(format: "%02x", $0) }.joined(), "links": links,
            "secrets_key": secretsKeyBase64, "sealed": sealed,
            "api_keys": try (0..<20).map { _ in try APIKey.generate().text },
        ]
        try JSONSerialization.data(withJSONObject: written, options: [.prettyPrinted, .sortedKeys])
            .write(to: directory.appendingPathComponent("packd.json"))
    }
}

extension Result where Success == Principal, Failure == TokenRefusal {
    /// The kid an `unknownKey` refusal names.
    var kid: String? {
        if case .failure(.unknownKey(let kid)) = self { return kid }
        return nil
    }
}
