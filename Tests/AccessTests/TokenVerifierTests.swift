@testable import Access
import Foundation
import Packs
import Testing

/// Tokens minted by PyJWT, jwcrypto and by hand (the attacks), checked against the expectations
/// written beside them (`Vectors/tokens.json`), at the clock they were minted for.
@Suite struct TokenVerifierTests {
    struct Case {
        let name: String
        let token: String
        let expect: String
        let tenant: String?
        let role: String?
        let subject: String
    }

    static func load() throws -> (settings: OIDCSettings, jwks: [UInt8], now: Int64, cases: [Case]) {
        let document = try Vectors.json("tokens")
        let settings = OIDCSettings(issuer: try #require(document["issuer"] as? String), audience: try #require(document["audience"] as? String))
        let cases = try #require(document["cases"] as? [[String: Any]]).map { entry in
            Case(name: entry["name"] as? String ?? "?", token: entry["token"] as? String ?? "", expect: entry["expect"] as? String ?? "?",
                 tenant: entry["tenant"] as? String, role: entry["role"] as? String, subject: entry["sub"] as? String ?? "")
        }
        return (settings, try Vectors.data(try #require(document["jwks"])), try #require(document["now"] as? Int64), cases)
    }

    static func outcome(_ verification: TokenVerification) -> String {
        switch verification {
        case .verified: "ok"
        case .unknownKey: "unknown_key"
        case .refused(let refusal): refusal.code
        }
    }

    @Test func keepsOnlyTheSigningKeysItCanPin() async throws {
        let (_, jwks, _, _) = try Self.load()
        let keys = try await IssuerKeySet.make(jwks: jwks)
        #expect(keys.kids.count == 3)
        #expect(Set(keys.kids.compactMap { keys.algorithm(of: $0) }) == [.rs256, .es256, .edDSA])
        // The encryption key, the 1024-bit RSA key and the symmetric key are left out.
        #expect(keys.skipped.count == 3, "\(keys.skipped)")
        #expect(keys.skipped.contains { $0.contains("use") } && keys.skipped.contains { $0.contains("1024 bits") })
        #expect(keys.skipped.contains { $0.hasPrefix("symmetric:") })
    }

    @Test func everyReferenceTokenGetsItsExpectedAnswer() async throws {
        let (settings, jwks, now, cases) = try Self.load()
        let keys = try await IssuerKeySet.make(jwks: jwks)
        let verifier = TokenVerifier(settings: settings)
        #expect(cases.count >= 30)
        for testCase in cases {
            let verification = verifier.verify(testCase.token, keys: keys, now: now)
            #expect(Self.outcome(verification) == testCase.expect, "\(testCase.name): \(verification)")
            if case .verified(let verified) = verification {
                #expect(verified.principal.tenant.rawValue == testCase.tenant, "\(testCase.name)")
                #expect(verified.principal.role.name == testCase.role, "\(testCase.name)")
                #expect(verified.principal.actor == .token(subject: testCase.subject), "\(testCase.name)")
                #expect(verified.principal.packs == nil && verified.principal.rateLimitKey.hasPrefix("sub:"))
            }
        }
    }

    @Test func theSkewIsConfigurable() async throws {
        let (settings, jwks, now, cases) = try Self.load()
        let keys = try await IssuerKeySet.make(jwks: jwks)
        var strict = settings
        strict.clockSkew = 0
        let verifier = TokenVerifier(settings: strict)
        let withinSkew = try #require(cases.first { $0.name == "expired within the skew" })
        #expect(Self.outcome(verifier.verify(withinSkew.token, keys: keys, now: now)) == "expired")
        let early = try #require(cases.first { $0.name == "nbf within the skew" })
        #expect(Self.outcome(verifier.verify(early.token, keys: keys, now: now)) == "not_yet_valid")
        let good = try #require(cases.first { $0.name == "RS256 by PyJWT" })
        // Accepted until exp (now + 600) plus the skew, not a second later.
        guard case .verified(let verified) = TokenVerifier(settings: settings).verify(good.token, keys: keys, now: now) else {
            Issue.record("the RS256 token did not verify")
            return
        }
        #expect(verified.acceptedUntil == now + 600 + 60)
        #expect(Self.outcome(TokenVerifier(settings: settings).verify(good.token, keys: keys, now: now + 659)) == "ok")
        #expect(Self.outcome(TokenVerifier(settings: settings).verify(good.token, keys: keys, now: now + 660)) == "expired")
    }

    @Test func configurableClaimNames() async throws {
        let (settings, jwks, now, cases) = try Self.load()
        let keys = try await IssuerKeySet.make(jwks: jwks)
        var renamed = settings
        renamed.tenantClaim = "org"
        let good = try #require(cases.first { $0.name == "ES256 by PyJWT" })
        #expect(TokenVerifier(settings: renamed).verify(good.token, keys: keys, now: now) == .refused(.missingClaim("org")))
        renamed = settings
        renamed.audience = "another-api"
        #expect(TokenVerifier(settings: renamed).verify(good.token, keys: keys, now: now) == .refused(.audience))
    }

    @Test func refusesOversizedTokensUnread() async throws {
        let (settings, jwks, now, _) = try Self.load()
        let keys = try await IssuerKeySet.make(jwks: jwks)
        let huge = String(repeating: "a", count: settings.maximumTokenLength + 1)
        #expect(TokenVerifier(settings: settings).verify(huge, keys: keys, now: now) == .refused(.malformed("longer than 8192 bytes")))
    }

    @Test func settingsSayWhatIsWrong() {
        #expect(OIDCSettings(issuer: "https://id.example.com", audience: "a").problem == nil)
        #expect(OIDCSettings(issuer: "http://127.0.0.1:8080/realm", audience: "a").problem == nil)
        #expect(OIDCSettings(issuer: "http://localhost", audience: "a").problem == nil)
        #expect(OIDCSettings(issuer: "http://id.example.com", audience: "a").problem?.contains("https") == true)
        #expect(OIDCSettings(issuer: "http://localhost.evil.com", audience: "a").problem?.contains("https") == true)
        #expect(OIDCSettings(issuer: "id.example.com", audience: "a").problem != nil)
        #expect(OIDCSettings(issuer: "https://id.example.com", audience: "").problem != nil)
        #expect(OIDCSettings(issuer: "https://id.example.com/", audience: "a").discoveryURL == "https://id.example.com/.well-known/openid-configuration")
    }
}
