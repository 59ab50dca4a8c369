@testable import Access
import Cryptography
import Foundation
import Packs
import PackdTestSupport

/// An OpenID Connect issuer on 127.0.0.1 for the live tests: a discovery document and a JWKS of
/// Ed25519 keys (replaceable, to rotate), each request counted, and EdDSA tokens made with its
/// keys. (Interop with other libraries' tokens is `TokenVerifierTests`' and `make verify-access`'s.)
final class TestIssuer: @unchecked Sendable {
    private let lock = NSLock()
    private var published: [Ed25519.PrivateKey]
    private var jwksStatus = 200
    private var discoveryIssuer: String?
    private(set) var upstream: TestUpstream!

    init(keys: [Ed25519.PrivateKey]) throws {
        published = keys
        upstream = try TestUpstream { [unowned self] request in self.answer(request) }
    }

    deinit { upstream.stop() }

    var issuer: String { upstream.url("/realms/test") }

    func settings(minimumRefetchInterval: Double = 30) -> OIDCSettings {
        OIDCSettings(issuer: issuer, audience: "packd-api", minimumRefetchInterval: minimumRefetchInterval)
    }

    func publish(_ keys: [Ed25519.PrivateKey]) { lock.withLock { published = keys } }
    func failJWKS(with status: Int) { lock.withLock { jwksStatus = status } }
    func claimIssuer(_ issuer: String) { lock.withLock { discoveryIssuer = issuer } }

    var discoveryRequests: Int { upstream.requests.filter { $0.target.hasSuffix("openid-configuration") }.count }
    var jwksRequests: Int { upstream.requests.filter { $0.target.hasSuffix("/certs") }.count }

    private func answer(_ request: TestUpstream.Request) -> TestUpstream.Reply {
        let (keys, status, claimed) = lock.withLock { (published, jwksStatus, discoveryIssuer) }
        switch request.target {
        case "/realms/test/.well-known/openid-configuration":
            let body = #"{"issuer":"\#(claimed ?? issuer)","jwks_uri":"\#(upstream.url("/realms/test/certs"))"}"#
            return .respond(status: 200, headers: [("Content-Type", "application/json")], body: Array(body.utf8))
        case "/realms/test/certs":
            guard status == 200 else { return .respond(status: status) }
            return .respond(status: 200, headers: [("Content-Type", "application/json")], body: JWKS.document(keys.map(\.publicKey)))
        default:
            return .respond(status: 404)
        }
    }

    /// A compact EdDSA JWT by `key`, naming `kid` (its thumbprint unless given).
    func token(key: Ed25519.PrivateKey, kid: String? = nil, now: Int64, lifetime: Int64 = 600, subject: String = "user-1",
               tenant: String = "acme", role: String = "write") throws -> String {
        let header = #"{"alg":"EdDSA","typ":"JWT","kid":"\#(kid ?? JWKS.thumbprint(of: key.publicKey))"}"#
        let claims = #"{"iss":"\#(issuer)","aud":"packd-api","sub":"\#(subject)","iat":\#(now),"exp":\#(now + lifetime),"packd_tenant":"\#(tenant)","packd_role":"\#(role)"}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)))
    }
}

/// A wall clock and a monotonic clock the test moves.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var wall: Int64
    private var monotonic: Double = 0

    init(wall: Int64) { self.wall = wall }

    func advance(seconds: Double) {
        lock.withLock {
            monotonic += seconds
            wall += Int64(seconds)
        }
    }

    var wallClock: Packs.WallClock { Packs.WallClock { [self] in lock.withLock { wall } } }
    var monotonicSeconds: () -> Double { { [self] in lock.withLock { monotonic } } }
    var now: Int64 { lock.withLock { wall } }
}

/// Completions collected from the loop thread.
final class Answers: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Int: Result<Packs.Principal, TokenRefusal>] = [:]

    func record(_ index: Int, _ result: Result<Packs.Principal, TokenRefusal>) { lock.withLock { results[index] = result } }
    var count: Int { lock.withLock { results.count } }
    subscript(index: Int) -> Result<Packs.Principal, TokenRefusal>? { lock.withLock { results[index] } }
    var all: [Result<Packs.Principal, TokenRefusal>] { lock.withLock { results.keys.sorted().compactMap { results[$0] } } }
}
