import PackdTestSupport
import Server
import Testing
@testable import API

@Suite struct CORSPolicyTests {
    func request(_ fields: [(String, String)], method: HTTPMethod = .get) -> HTTPRequest {
        HTTPRequest(method: method, target: "/v1/packs", headers: HTTPHeaders(fields))
    }

    @Test func parsesConfiguration() throws {
        #expect(try CORSPolicy(parsing: "").allowedOrigins == .none)
        #expect(try CORSPolicy(parsing: " * ").allowedOrigins == .any)
        #expect(try CORSPolicy(parsing: "https://a.example, http://localhost:3000").allowedOrigins == .list(["https://a.example", "http://localhost:3000"]))
        #expect(throws: CORSPolicy.ConfigurationError.self) { try CORSPolicy(parsing: "a.example") }
        #expect(throws: CORSPolicy.ConfigurationError.self) { try CORSPolicy(parsing: "javascript://x") }
    }

    @Test func simpleResponsesCarryOriginAndExposedHeadersOnlyForAllowedOrigins() throws {
        let policy = try CORSPolicy(parsing: "https://dash.example")
        let allowed = policy.responseHeaders(for: request([("Origin", "https://DASH.example")]))
        #expect(allowed["Access-Control-Allow-Origin"] == "https://DASH.example")
        #expect(allowed["Vary"] == "Origin")
        #expect(allowed["Access-Control-Expose-Headers"] == "ETag, Location, Last-Event-ID, X-Request-Id")
        let other = policy.responseHeaders(for: request([("Origin", "https://evil.example")]))
        #expect(other["Access-Control-Allow-Origin"] == nil)
        #expect(other["Vary"] == "Origin")
        #expect(CORSPolicy(allowedOrigins: .any).responseHeaders(for: request([("Origin", "https://x.example")]))["Access-Control-Allow-Origin"] == "*")
        #expect(CORSPolicy.disabled.responseHeaders(for: request([("Origin", "https://x.example")])).count == 0)
    }

    @Test func preflightAnswersAllowedMethodsOnly() throws {
        let policy = try CORSPolicy(parsing: "https://dash.example")
        let good = policy.preflightResponse(for: request([("Origin", "https://dash.example"), ("Access-Control-Request-Method", "PATCH"), ("Access-Control-Request-Headers", "authorization, content-type")], method: .options))
        #expect(good.status == .noContent)
        #expect(good.headers["Access-Control-Allow-Origin"] == "https://dash.example")
        #expect(good.headers["Access-Control-Allow-Methods"]?.contains("PATCH") == true)
        #expect(good.headers["Access-Control-Allow-Headers"]?.contains("Authorization") == true)
        #expect(good.headers["Access-Control-Max-Age"] == "600")
        let badMethod = policy.preflightResponse(for: request([("Origin", "https://dash.example"), ("Access-Control-Request-Method", "TRACE")], method: .options))
        #expect(badMethod.headers["Access-Control-Allow-Origin"] == nil)
        let badOrigin = policy.preflightResponse(for: request([("Origin", "https://evil.example"), ("Access-Control-Request-Method", "GET")], method: .options))
        #expect(badOrigin.headers["Access-Control-Allow-Origin"] == nil)
    }

    @Test func wrappedRoutesDecorateEveryAnswerOverTheWire() throws {
        let keys = try APIKeyAuthenticator(parsing: "read:read-key-0123456789", source: "keys")
        let fixture = try APIFixture { router, _ in
            let cors = CORSPolicy(allowedOrigins: .list(["https://dash.example"]))
            cors.add(.get, "/v1/packs/{id}", to: &router, keys.guarding(.read) { request, responder in
                responder.respond(HTTPResponse(status: .ok, headers: ["ETag": "\"1\""], body: Array((request.parameters["id"] ?? "").utf8)))
            })
        }
        defer { fixture.stop() }
        let preflight = try StreamClient(port: fixture.port)
        try preflight.send("OPTIONS /v1/packs/7 HTTP/1.1\r\nHost: x\r\nOrigin: https://dash.example\r\nAccess-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: authorization\r\n\r\n")
        try preflight.readHead()
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == "https://dash.example")
        #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Authorization") == true)

        let ok = try StreamClient(port: fixture.port)
        try ok.get("/v1/packs/7", headers: ["Origin": "https://dash.example", "Authorization": "Bearer read-key-0123456789"])
        #expect(ok.status == 200)
        #expect(ok.header("Access-Control-Allow-Origin") == "https://dash.example")
        #expect(ok.header("Access-Control-Expose-Headers") == "ETag, Location, Last-Event-ID, X-Request-Id")
        #expect(try ok.readBody() == "7")

        // The 401 from the auth wrapper inside is readable by the page too.
        let denied = try StreamClient(port: fixture.port)
        try denied.get("/v1/packs/7", headers: ["Origin": "https://dash.example"])
        #expect(denied.status == 401)
        #expect(denied.header("Access-Control-Allow-Origin") == "https://dash.example")
        #expect(denied.header("WWW-Authenticate") != nil)
    }

    /// `Allow` on an `OPTIONS` answer lists what the target resource supports (RFC 9110 §10.2.1),
    /// not every method the API has.
    @Test func optionsAllowListsTheResourcesOwnMethods() throws {
        let fixture = try APIFixture { router, _ in
            let cors = CORSPolicy(allowedOrigins: .none)
            let answer: APIHandler = { _, responder in responder.respond(HTTPResponse(status: .noContent)) }
            cors.add(.get, "/v1/packs/{id}", to: &router, answer)
            cors.add(.delete, "/v1/packs/{id}", to: &router, answer)
            cors.add(.put, "/v1/storage/tile-limit", to: &router, answer)
        }
        defer { fixture.stop() }
        let pack = try StreamClient(port: fixture.port)
        try pack.send("OPTIONS /v1/packs/7 HTTP/1.1\r\nHost: x\r\n\r\n")
        try pack.readHead()
        #expect(pack.status == 204)
        #expect(pack.header("Allow") == "GET, HEAD, OPTIONS, DELETE")
        let limit = try StreamClient(port: fixture.port)
        try limit.send("OPTIONS /v1/storage/tile-limit HTTP/1.1\r\nHost: x\r\n\r\n")
        try limit.readHead()
        #expect(limit.header("Allow") == "PUT, OPTIONS")
        let wrongMethod = try StreamClient(port: fixture.port)
        try wrongMethod.send("POST /v1/storage/tile-limit HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        try wrongMethod.readHead()
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("Allow") == "PUT, OPTIONS")
    }
}
