import Access
import API
import ArgumentParser
import Cryptography
import Fetch
import Foundation
import Loop
import Packs
import PackdTestSupport

/// `packd-bench access`: what authenticating one request costs, beside today's API-key check in
/// the same run — the budget being `GET /v1/packs/{id}` p99 with a JWT within 0.2 ms of today's.
///
/// 1. An API key from the keys file: `APIKeyAuthenticator.role(of:)` (SHA-256, constant-time
///    comparisons) — what every request pays today.
/// 2. A bearer token seen before: `OIDCAuthenticator.authenticate` on a loop, answered from its
///    cache (a SHA-256 of the token and a lookup), against an issuer on 127.0.0.1.
/// 3. A token's first sight: the full check (jwt-kit's signature verification and the claims)
///    for EdDSA through the same authenticator, and for RS256, ES256 and EdDSA tokens minted by
///    PyJWT (`Tests/AccessTests/Vectors/tokens.json`) through `TokenVerifier`.
/// 4. A device link: `DeviceLinkSigner.verify` (HMAC-SHA256 over the canonical string).
struct AccessBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "access",
        abstract: "Per-request cost of API keys, cached and fresh JWTs (EdDSA, RS256, ES256) and device links, beside today's key check."
    )

    @Option(help: "Checks per measurement.") var iterations = 20_000
    @Option(help: "Repetitions of each measurement; the best is reported.") var repetitions = 5
    @Option(help: "The PyJWT-minted token vectors.") var vectors = "Tests/AccessTests/Vectors/tokens.json"

    func run() throws {
        print("load before: \(try String(contentsOfFile: "/proc/loadavg", encoding: .utf8).prefix(14))")
        var sink = 0

        // 1. Today: the keys file's check.
        let keys = try APIKeyAuthenticator(parsing: "read:read-key-0123456789\nwrite:write-key-0123456789\nadmin:admin-key-0123456789",
                                           source: "bench")
        let presented: Substring = "write-key-0123456789"
        let keyCheck = best { for _ in 0..<iterations { sink &+= keys.role(of: presented)?.rawValue ?? 0 } }

        // 2 and 3 (EdDSA): the authenticator on a loop, keys from an issuer on 127.0.0.1.
        let signing = try Ed25519.PrivateKey()
        let issuer = try LocalIssuer(key: signing)
        defer { issuer.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let authenticator = try harness.thread.sync {
            OIDCAuthenticator(settings: OIDCSettings(issuer: issuer.issuer, audience: "packd-api"), loop: harness.thread.loop, fetcher: harness.fetcher)
        }
        let now = Int64(Date().timeIntervalSince1970)
        let cachedToken = try issuer.token(subject: "bench", now: now)
        let loaded = DispatchSemaphore(value: 0)
        try harness.thread.sync { authenticator.authenticate(cachedToken) { _ in loaded.signal() } }
        guard loaded.wait(timeout: .now() + 30) == .success else { throw ValidationError("the issuer's keys did not load") }
        let cached = try onLoop(harness) { authenticator.authenticate(cachedToken) { if case .success = $0 { sink &+= 1 } } }
        let freshTokens = try (0..<(iterations * repetitions)).map { try issuer.token(subject: "user-\($0)", now: now) }
        var next = 0
        let freshEdDSA = try onLoop(harness) {
            authenticator.authenticate(freshTokens[next]) { if case .success = $0 { sink &+= 1 } }
            next += 1
        }
        guard sink >= iterations * repetitions * 2 else { throw ValidationError("tokens were refused: \(sink)") }

        // 3 (RS256, ES256, EdDSA by PyJWT): the verifier alone, at the vectors' clock.
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: vectors))) as? [String: Any] ?? [:]
        let jwks = Array(try JSONSerialization.data(withJSONObject: document["jwks"] ?? [:]))
        let keySet = try blocking { try await IssuerKeySet.make(jwks: jwks) }
        let verifier = TokenVerifier(settings: OIDCSettings(issuer: document["issuer"] as? String ?? "", audience: document["audience"] as? String ?? ""))
        let vectorNow = document["now"] as? Int64 ?? 0
        let cases = document["cases"] as? [[String: Any]] ?? []
        var byLibrary: [(String, Double)] = []
        for name in ["RS256 by PyJWT", "ES256 by PyJWT", "EdDSA by PyJWT"] {
            guard let token = cases.first(where: { $0["name"] as? String == name })?["token"] as? String,
                  case .verified = verifier.verify(token, keys: keySet, now: vectorNow) else { throw ValidationError("\(name) did not verify") }
            byLibrary.append((name, best {
                for _ in 0..<iterations / 10 { if case .verified = verifier.verify(token, keys: keySet, now: vectorNow) { sink &+= 1 } }
            }))
        }

        // 4. A device link.
        let links = try DeviceLinkSigner(secret: DeviceLinkSigner.generateSecret())
        let path = "/v1/packs/42/versions/3/export"
        let query = try links.signedQuery(path: path, parameters: ["format": "pmtiles"], expires: now + 3_600) + "&from=2"
        let link = best { for _ in 0..<iterations { if case .valid = links.verify(method: "GET", path: path, query: query, now: now) { sink &+= 1 } } }

        let perCheck = { (seconds: Double, count: Int) in seconds / Double(count) * 1e6 }
        let base = perCheck(keyCheck, iterations)
        print("authentication per request, best of \(repetitions) × \(iterations) (debug builds are slower: use -c release):")
        print(String(format: "  API key, keys file (today)            %7.2f µs", base))
        print(String(format: "  JWT seen before (cache hit)           %7.2f µs   %+.2f µs over today's key check", perCheck(cached, iterations), perCheck(cached, iterations) - base))
        print(String(format: "  JWT first sight, EdDSA on the loop  %7.2f µs", perCheck(freshEdDSA, iterations)))
        for (name, seconds) in byLibrary {
            let label = "  JWT first sight, \(name)"
            print(label.padding(toLength: 38, withPad: " ", startingAt: 0) + String(format: "%7.2f µs", perCheck(seconds, iterations / 10)))
        }
        print(String(format: "  device link (HMAC-SHA256)             %7.2f µs", perCheck(link, iterations)))
        print("  budget: GET /v1/packs/{id} p99 with a JWT within 200 µs of today's (checks: \(sink & 1))")
    }

    /// The best time of `repetitions` runs of `body`, each run `iterations` calls, on the loop thread.
    private func onLoop(_ harness: FetchHarness, _ body: @escaping () -> Void) throws -> Double {
        let runs = iterations
        return try harness.thread.sync { best { for _ in 0..<runs { body() } } }
    }

    private func best(_ body: () -> Void) -> Double {
        bestSeconds(of: repetitions, body)
    }

    /// Runs async `work` to completion from this (non-pool) thread.
    private func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, any Error>?
        Task.detached {
            do { result = .success(try await work()) } catch { result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try result!.get()
    }
}

/// An identity provider on 127.0.0.1 with one Ed25519 key, for the benchmark.
private final class LocalIssuer: @unchecked Sendable {
    let key: Ed25519.PrivateKey
    private var upstream: TestUpstream!

    init(key: Ed25519.PrivateKey) throws {
        self.key = key
        let jwks = JWKS.document([key.publicKey])
        let box = PortBox()
        upstream = try TestUpstream { request in
            if request.target.hasSuffix("openid-configuration") {
                let base = "http://127.0.0.1:\(box.port)/realms/bench"
                return .respond(status: 200, body: Array(#"{"issuer":"\#(base)","jwks_uri":"\#(base)/certs"}"#.utf8))
            }
            return request.target.hasSuffix("/certs") ? .respond(status: 200, body: jwks) : .respond(status: 404)
        }
        box.port = upstream.port
    }

    var issuer: String { upstream.url("/realms/bench") }

    func token(subject: String, now: Int64) throws -> String {
        let header = #"{"alg":"EdDSA","typ":"JWT","kid":"\#(JWKS.thumbprint(of: key.publicKey))"}"#
        let claims = #"{"iss":"\#(issuer)","aud":"packd-api","sub":"\#(subject)","iat":\#(now),"exp":\#(now + 3_600),"packd_tenant":"acme","packd_role":"read"}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)))
    }

    func stop() { upstream.stop() }
}

private final class PortBox: @unchecked Sendable {
    var port = 0
}
