@testable import Access
import Cryptography
import Fetch
import Foundation
import Loop
import Packs
import PackdTestSupport
import Testing

/// The authenticator on a real loop, fetching a real (in-process) issuer's discovery document and
/// JWKS over 127.0.0.1.
@Suite struct OIDCAuthenticatorTests {
    final class Setup: @unchecked Sendable {
        let issuer: TestIssuer
        let harness: FetchHarness
        let clock = ManualClock(wall: 1_800_000_000)
        var authenticator: OIDCAuthenticator!

        init(keys: [Ed25519.PrivateKey], minimumRefetchInterval: Double = 30) throws {
            issuer = try TestIssuer(keys: keys)
            harness = try FetchHarness()
            let settings = issuer.settings(minimumRefetchInterval: minimumRefetchInterval)
            authenticator = try harness.thread.sync { [harness, clock] in
                OIDCAuthenticator(settings: settings, loop: harness.thread.loop, fetcher: harness.fetcher,
                                  wallClock: clock.wallClock, monotonicSeconds: clock.monotonicSeconds)
            }
        }

        /// Authenticates every token at once; waits for every answer.
        func authenticate(_ tokens: [String]) throws -> [Result<Principal, TokenRefusal>] {
            let answers = Answers()
            try harness.thread.sync { [authenticator] in
                for (index, token) in tokens.enumerated() {
                    authenticator!.authenticate(token) { answers.record(index, $0) }
                }
            }
            try #require(eventually { answers.count == tokens.count }, "every token answered")
            return answers.all
        }

        /// Whether `token` is answered within the call itself (no fetch, no waiting).
        func answeredAtOnce(_ token: String) throws -> Result<Principal, TokenRefusal>? {
            try harness.thread.sync { [authenticator] in
                var answer: Result<Principal, TokenRefusal>?
                authenticator!.authenticate(token) { answer = $0 }
                return answer
            }
        }

        func close() {
            harness.close()
            issuer.upstream.stop()
        }
    }

    @Test func verifiesAfterDiscoveryThenAnswersFromTheCache() throws {
        let key = try Ed25519.PrivateKey()
        let setup = try Setup(keys: [key])
        defer { setup.close() }
        let token = try setup.issuer.token(key: key, now: setup.clock.now)
        let first = try setup.authenticate([token])
        #expect(try first[0].get() == Principal(tenant: TenantID("acme")!, role: .write, actor: .token(subject: "user-1"),
                                                rateLimitKey: try first[0].get().rateLimitKey))
        #expect(setup.issuer.discoveryRequests == 1 && setup.issuer.jwksRequests == 1)
        // Verified once: the same token is answered synchronously, with no request to the issuer.
        for _ in 0..<100 {
            #expect(try setup.answeredAtOnce(token).map { try $0.get().role } == .write)
        }
        // A new token by a known key is verified at once too.
        let other = try setup.issuer.token(key: key, now: setup.clock.now, subject: "user-2", role: "admin")
        #expect(try setup.answeredAtOnce(other).map { try $0.get().role } == .admin)
        #expect(setup.issuer.discoveryRequests == 1 && setup.issuer.jwksRequests == 1)
        #expect(try setup.harness.thread.sync { setup.authenticator.fetchesStarted } == 1)
    }

    @Test func aCachedTokenStillExpires() throws {
        let key = try Ed25519.PrivateKey()
        let setup = try Setup(keys: [key])
        defer { setup.close() }
        let token = try setup.issuer.token(key: key, now: setup.clock.now, lifetime: 10)
        #expect(throws: Never.self) { try setup.authenticate([token])[0].get() }
        setup.clock.advance(seconds: 69)
        #expect(try setup.answeredAtOnce(token).map { try $0.get().tenant } == TenantID("acme"))
        setup.clock.advance(seconds: 1)
        #expect(try setup.answeredAtOnce(token).map { result in
            if case .failure(.expired) = result { true } else { false }
        } == true, "exp + 60 s of skew: refused, not served from the cache")
    }

    @Test func anUnknownKidFloodCostsOneFetchPerInterval() throws {
        let key = try Ed25519.PrivateKey()
        let setup = try Setup(keys: [key], minimumRefetchInterval: 30)
        defer { setup.close() }
        _ = try setup.authenticate([try setup.issuer.token(key: key, now: setup.clock.now)])
        #expect(setup.issuer.jwksRequests == 1)
        setup.clock.advance(seconds: 100)
        // 500 tokens naming keys the issuer never had, all at once: one fetch, every one refused.
        let forged = try (0..<500).map { try setup.issuer.token(key: Ed25519.PrivateKey(), kid: "forged-\($0)", now: setup.clock.now) }
        let answers = try setup.authenticate(forged)
        #expect(answers.allSatisfy { if case .failure(.unknownKey) = $0 { true } else { false } })
        #expect(setup.issuer.jwksRequests == 2)
        // Within the interval no further fetch, however many tokens.
        setup.clock.advance(seconds: 20)
        _ = try setup.authenticate(Array(forged.prefix(200)))
        #expect(setup.issuer.jwksRequests == 2)
        // Once it has passed, one more.
        setup.clock.advance(seconds: 11)
        _ = try setup.authenticate(Array(forged.suffix(200)))
        #expect(setup.issuer.jwksRequests == 3)
        #expect(setup.issuer.discoveryRequests == 1, "the JWKS address is remembered")
    }

    @Test func aRotatedKeyIsFetchedOnItsFirstToken() throws {
        let old = try Ed25519.PrivateKey(), new = try Ed25519.PrivateKey()
        let setup = try Setup(keys: [old])
        defer { setup.close() }
        let oldToken = try setup.issuer.token(key: old, now: setup.clock.now)
        #expect(throws: Never.self) { try setup.authenticate([oldToken])[0].get() }
        // The issuer rotates to the new key and drops the old one.
        setup.issuer.publish([new])
        setup.clock.advance(seconds: 31)
        let newToken = try setup.issuer.token(key: new, now: setup.clock.now)
        #expect(try setup.answeredAtOnce(newToken) == nil, "waits for the fetch")
        #expect(try setup.authenticate([newToken])[0].get().actor == .token(subject: "user-1"))
        #expect(setup.issuer.jwksRequests == 2)
        // Tokens of the dropped key left the cache with it.
        guard case .failure(.unknownKey) = try setup.authenticate([oldToken])[0] else {
            Issue.record("a token of a key the issuer dropped was still accepted")
            return
        }
    }

    @Test func anIssuerThatIsDownLeavesTokensRefusedNotWaiting() throws {
        let key = try Ed25519.PrivateKey()
        let setup = try Setup(keys: [key])
        defer { setup.close() }
        setup.issuer.failJWKS(with: 503)
        let failures = FailureLog()
        try setup.harness.thread.sync { setup.authenticator.onKeysFetched = { if case .failure(let problem) = $0 { failures.append("\(problem)") } } }
        let token = try setup.issuer.token(key: key, now: setup.clock.now)
        let answers = try setup.authenticate(Array(repeating: token, count: 50))
        #expect(answers.allSatisfy { $0 == .failure(.keysUnavailable) })
        #expect(failures.entries.count == 1 && failures.entries[0].hasSuffix("/realms/test/certs: HTTP 503"), "\(failures.entries)")
        // A fetch failed on the JWKS is retried through discovery, within the same attempt.
        #expect(setup.issuer.jwksRequests == 1 && setup.issuer.discoveryRequests == 1)
        // The issuer recovers; the next attempt waits for the interval.
        setup.issuer.failJWKS(with: 200)
        #expect(try setup.authenticate([token])[0] == .failure(.keysUnavailable))
        setup.clock.advance(seconds: 30)
        #expect(throws: Never.self) { try setup.authenticate([token])[0].get() }
    }

    @Test func aDiscoveryDocumentForAnotherIssuerIsRefused() throws {
        let key = try Ed25519.PrivateKey()
        let setup = try Setup(keys: [key])
        defer { setup.close() }
        setup.issuer.claimIssuer("https://evil.example.com/realms/test")
        let failures = FailureLog()
        try setup.harness.thread.sync { setup.authenticator.onKeysFetched = { if case .failure(let problem) = $0 { failures.append("\(problem)") } } }
        let answers = try setup.authenticate([try setup.issuer.token(key: key, now: setup.clock.now)])
        #expect(answers[0] == .failure(.keysUnavailable))
        #expect(setup.issuer.jwksRequests == 0)
        #expect(failures.entries.first?.contains("the discovery document's issuer is not") == true)
    }
}

final class FailureLog: @unchecked Sendable {
    private let lock = NSLock()
    private var log: [String] = []
    func append(_ entry: String) { lock.withLock { log.append(entry) } }
    var entries: [String] { lock.withLock { log } }
}
