import Foundation
import PackdTestSupport
import Server
import Testing
@testable import API

@Suite struct APIKeyAuthenticatorTests {
    static let readKey = "read-key-0123456789"
    static let writeKey = "write-key-0123456789"
    static let adminKey = "admin-key-0123456789"

    func authenticator() throws -> APIKeyAuthenticator {
        try APIKeyAuthenticator(parsing: """
            # comment
            read:\(Self.readKey)

            write:\(Self.writeKey)
            admin:\(Self.adminKey)
            """, source: "keys")
    }

    func request(_ target: String, authorization: String? = nil) -> HTTPRequest {
        var headers = HTTPHeaders()
        if let authorization { headers.add("Authorization", authorization) }
        return HTTPRequest(method: .get, target: target, headers: headers)
    }

    @Test func parsesRolesAndRejectsBadLinesWithoutEchoingKeys() throws {
        let keys = try authenticator()
        #expect(keys.keyCount == 3)
        #expect(keys.role(of: Substring(Self.writeKey)) == .write)
        #expect(keys.role(of: "write-key-012345678") == nil)

        let secret = "supersecret-value-1234"
        let badRole = #expect(throws: APIKeyAuthenticator.ConfigurationError.self) {
            try APIKeyAuthenticator(parsing: "read:aaaaaaaaaaaaaaaaaaaa\n\nroot:\(secret)", source: "keys")
        }
        #expect(badRole?.description == "keys line 3: role must be read, write or admin")
        #expect(throws: APIKeyAuthenticator.ConfigurationError.self) { try APIKeyAuthenticator(parsing: "read:short", source: "keys") }
        #expect(throws: APIKeyAuthenticator.ConfigurationError.self) { try APIKeyAuthenticator(parsing: "admin \(secret)", source: "keys") }
        let duplicate = #expect(throws: APIKeyAuthenticator.ConfigurationError.self) {
            try APIKeyAuthenticator(parsing: "read:\(secret)\nadmin:\(secret)", source: "keys")
        }
        #expect(duplicate?.description.contains(secret) == false)
        #expect(duplicate?.description.contains("line 2") == true)
    }

    @Test func loadsFromEnvironmentAndFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("keys").path
        try "admin:\(Self.adminKey)\n".write(toFile: file, atomically: true, encoding: .utf8)
        let keys = try APIKeyAuthenticator.load(environment: ["PACKD_API_KEYS": "read:\(Self.readKey), write:\(Self.writeKey)"], file: file)
        #expect(keys.keyCount == 3)
        #expect(keys.role(of: Substring(Self.adminKey)) == .admin)
        #expect(keys.role(of: Substring(Self.readKey)) == .read)
        #expect(throws: APIKeyAuthenticator.ConfigurationError.self) {
            try APIKeyAuthenticator.load(environment: ["PACKD_API_KEYS": "admin:\(Self.adminKey)"], file: file)
        }
        #expect(throws: APIKeyAuthenticator.ConfigurationError.self) {
            try APIKeyAuthenticator.load(environment: [:], file: directory.appendingPathComponent("missing").path)
        }
        #expect(try APIKeyAuthenticator.load(environment: [:], file: nil).isEnabled == false)
    }

    @Test func distinguishesMissingInvalidAndInsufficientKeys() throws {
        let keys = try authenticator()
        let outcome = { (request: HTTPRequest, role: APIRole?, query: Bool) -> Int in
            switch keys.authenticate(request, requires: role, allowsQueryToken: query) {
            case .success: 200
            case .failure(let problem): problem.status
            }
        }
        #expect(outcome(request("/v1/packs"), .read, false) == 401)
        #expect(outcome(request("/v1/packs", authorization: "Bearer nope-nope-nope-nope"), .read, false) == 401)
        #expect(outcome(request("/v1/packs", authorization: "Basic \(Self.readKey)"), .read, false) == 401)
        #expect(outcome(request("/v1/packs", authorization: "bearer  \(Self.readKey) "), .read, false) == 200)
        #expect(outcome(request("/v1/packs", authorization: "Bearer \(Self.readKey)"), .write, false) == 403)
        #expect(outcome(request("/v1/storage", authorization: "Bearer \(Self.writeKey)"), .admin, false) == 403)
        #expect(outcome(request("/v1/storage", authorization: "Bearer \(Self.adminKey)"), .admin, false) == 200)
        #expect(outcome(request("/healthz"), nil, false) == 200)
        // The query token counts only where the route allows it.
        #expect(outcome(request("/v1/events?access_token=\(Self.readKey)"), .read, true) == 200)
        #expect(outcome(request("/v1/packs?access_token=\(Self.readKey)"), .read, false) == 401)
        if case .failure(let problem) = keys.authenticate(request("/v1/packs"), requires: .read) {
            #expect(problem.type == "urn:packd:problem:unauthorized")
        }
        // Without keys everything is allowed.
        #expect(APIKeyAuthenticator().authenticate(request("/v1/storage"), requires: .admin) == .success(.unauthenticated))
    }

    @Test func guardedRoutesAnswerOverTheWire() throws {
        let keys = try authenticator()
        let fixture = try APIFixture { router, _ in
            let cors = CORSPolicy.disabled
            router.get("/v1/events", cors.wrap(keys.guarding(.read, allowsQueryToken: true) { _, responder in responder.respond(.text("events")) }))
            router.post("/v1/storage/reset", cors.wrap(keys.guarding(.admin) { _, responder in responder.respond(.text("reset")) }))
        }
        defer { fixture.stop() }
        let missing = try StreamClient(port: fixture.port)
        try missing.get("/v1/events")
        #expect(missing.status == 401)
        #expect(missing.header("WWW-Authenticate") == #"Bearer realm="packd""#)
        #expect(missing.header("Content-Type") == "application/problem+json")
        let body = try missing.readBody()
        #expect(body.contains("urn:packd:problem:unauthorized"))

        let query = try StreamClient(port: fixture.port)
        try query.get("/v1/events?access_token=\(Self.readKey)")
        #expect(query.status == 200)
        #expect(try query.readBody() == "events")

        let forbidden = try StreamClient(port: fixture.port)
        try forbidden.send("POST /v1/storage/reset HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Self.writeKey)\r\nContent-Length: 0\r\n\r\n")
        try forbidden.readHead()
        #expect(forbidden.status == 403)
        #expect(forbidden.header("WWW-Authenticate") == nil)
        let forbiddenBody = try forbidden.readBody()
        #expect(forbiddenBody.contains("urn:packd:problem:forbidden"))
        #expect(!forbiddenBody.contains(Self.writeKey))
    }

    @Test func redactsAccessTokensFromLoggedTargets() {
        #expect(AccessLogRedaction.redact("/v1/events?access_token=secret") == "/v1/events?access_token=REDACTED")
        #expect(AccessLogRedaction.redact("/v1/events?a=1&ACCESS%5Ftoken=secret&b=2") == "/v1/events?a=1&ACCESS%5Ftoken=REDACTED&b=2")
        #expect(AccessLogRedaction.redact("/v1/events?access_token") == "/v1/events?access_token=REDACTED")
        #expect(AccessLogRedaction.redact("/v1/packs?state=active") == "/v1/packs?state=active")
        #expect(AccessLogRedaction.redact("/v1/packs") == "/v1/packs")
        #expect(!AccessLogRedaction.redact("/x?%ZZ=secret").contains("secret"))
    }

    @Test func withoutKeysOnlyLoopbackIsAccepted() throws {
        let none = APIKeyAuthenticator()
        for host in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
            #expect(throws: Never.self) { try ListenAddressPolicy.check(try ListenAddress(host: host, port: 8080), authenticator: none) }
        }
        for host in ["0.0.0.0", "10.0.0.1", "::", "128.0.0.1"] {
            #expect(throws: ListenAddressPolicy.Refusal.self) { try ListenAddressPolicy.check(try ListenAddress(host: host, port: 8080), authenticator: none) }
        }
        let keys = try authenticator()
        #expect(throws: Never.self) { try ListenAddressPolicy.check(try ListenAddress(host: "0.0.0.0", port: 8080), authenticator: keys) }
    }
}
