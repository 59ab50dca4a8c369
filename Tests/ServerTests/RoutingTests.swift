import Foundation
import Logging
import PackdTestSupport
@testable import Server
import Testing

@Suite struct RoutingTests {
    private func server() throws -> TestServer {
        try TestServer { router, _ in
            router.get("/v1/packs/{id}/events") { request, responder in
                responder.respond(.json(["id": request.parameters["id"] ?? "", "q": request.queryValue("after") ?? ""]))
            }
            router.delete("/v1/packs/{id}") { _, responder in responder.respond(HTTPResponse(status: .noContent)) }
            router.post("/v1/packs") { request, responder in
                struct Body: Decodable { let name: String }
                do throws(Problem) {
                    let body = try request.decodeJSON(Body.self)
                    responder.respond(.json(["name": body.name], status: .created))
                } catch {
                    responder.respond(.problem(error))
                }
            }
        }
    }

    @Test func pathParametersAreDecodedAndQueryIsReadable() throws {
        let server = try server()
        defer { server.stop() }
        let response = try server.client().request("GET /v1/packs/4%202/events?after=7&x=1 HTTP/1.1\r\n\r\n")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String]
        #expect(object == ["id": "4 2", "q": "7"])
    }

    @Test func headHasTheHeadersOfGetAndNoBody() throws {
        let server = try server()
        defer { server.stop() }
        let client = try server.client()
        let get = try client.request("GET /v1/packs/1/events HTTP/1.1\r\n\r\n")
        let head = try client.request("HEAD /v1/packs/1/events HTTP/1.1\r\n\r\n", bodyless: true)
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(get.body.count))
        #expect(head.header("Content-Type") == get.header("Content-Type"))
        // Nothing follows the head: the next answer on the connection parses cleanly.
        #expect(try client.request("GET /v1/packs/2/events HTTP/1.1\r\n\r\n").status == 200)
    }

    @Test func unknownPathIs404ProblemJSON() throws {
        let server = try server()
        defer { server.stop() }
        let response = try server.client().request("GET /v1/nothing HTTP/1.1\r\n\r\n")
        #expect(response.status == 404)
        #expect(response.header("Content-Type") == "application/problem+json")
        let problem = try JSONDecoder().decode(Problem.self, from: Data(response.body))
        #expect(problem.status == 404)
        #expect(problem.title == "Not found")
        #expect(problem.type == "urn:packd:problem:not-found")
        #expect(problem.detail.contains("/v1/nothing"))
    }

    @Test func wrongMethodIs405WithAllow() throws {
        let server = try server()
        defer { server.stop() }
        let response = try server.client().request("PUT /v1/packs/9 HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        #expect(response.status == 405)
        #expect(response.header("Allow") == "DELETE")
        let events = try server.client().request("POST /v1/packs/9/events HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        #expect(events.header("Allow") == "GET, HEAD")
        let literal = try server.client().request("GET /v1/packs HTTP/1.1\r\n\r\n")
        #expect(literal.status == 405)
        #expect(literal.header("Allow") == "POST")
    }

    /// A method http_parser does not know (it stops at `Q`) is still answered as HTTP says: 405
    /// with the path's `Allow`, 404 where nothing is routed. The head is not read past its request
    /// line, so the connection closes after the answer, which is logged with the method it named.
    @Test(arguments: [
        ("QUERY /v1/packs/9 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", 405, "DELETE"),
        ("QUERY /v1/packs/9/events?after=1 HTTP/1.1\r\n\r\n", 405, "GET, HEAD"),
        // http_parser matched "GET" and refused the "X": the start of the method is not lost.
        ("GETX /v1/packs HTTP/1.1\r\n\r\n", 405, "POST"),
        ("PROPFOO /v1/packs HTTP/1.1\r\n\r\n", 405, "POST"),
        ("query /v1/packs HTTP/1.0\r\n\r\n", 405, "POST"),
        ("QUERY /v1/nothing HTTP/1.1\r\n\r\n", 404, nil),
        // The access token of a query is not logged (the path only), as for every method.
        ("QUERY /v1/packs/%FF?access_token=SECRET HTTP/1.1\r\n\r\n", 405, "DELETE"),
    ] as [(String, Int, String?)])
    func methodTheParserDoesNotKnowIs405WithAllow(request: String, status: Int, allow: String?) throws {
        let log = CapturedLog()
        let server = try TestServer(log: log) { router, _ in
            router.get("/v1/packs/{id}/events") { _, responder in responder.respond(.text("events")) }
            router.delete("/v1/packs/{id}") { _, responder in responder.respond(HTTPResponse(status: .noContent)) }
            router.post("/v1/packs") { _, responder in responder.respond(.text("created")) }
        }
        defer { server.stop() }
        let client = try server.client()
        let response = try client.request(request)
        #expect(response.status == status)
        #expect(response.header("Allow") == allow)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.header("Connection") == "close")
        #expect(try client.waitForClose())
        let method = String(request.prefix(while: { $0 != " " }))
        #expect(eventually { log.entries.contains { $0.message == "access" && "\($0.metadata["method"] ?? "")" == method && "\($0.metadata["status"] ?? "")" == "\(status)" } })
        #expect(!log.entries.map { "\($0.message) \($0.metadata)" }.joined().contains("SECRET"))
    }

    /// The request line may come in pieces, the method itself split between reads; what the
    /// line needs to be (a token, a target, a version) is checked, anything else stays a 400; and
    /// a pipelined request's answer waits for the one before it.
    @Test func unknownMethodSplitAcrossReadsIsAnsweredInOrderAndJunkIs400() throws {
        let server = try TestServer { router, _ in
            router.post("/v1/packs") { _, responder in responder.respond(.text("created")) }
        }
        defer { server.stop() }
        let client = try server.client()
        for part in ["POST /v1/packs HTTP/1.1\r\nContent-Length: 0\r\n\r\nPROP", "FOO /v1/pa", "cks HTTP/1.1\r\n", "Host: x\r\n\r\n"] {
            let before = server.onLoop { server.server.receivedBytes }
            try client.send(part)
            #expect(eventually { server.onLoop { server.server.receivedBytes } >= before + part.utf8.count })
        }
        #expect(try client.readResponse().status == 200)
        let refused = try client.readResponse()
        #expect(refused.status == 405)
        #expect(refused.header("Allow") == "POST")
        #expect(try client.waitForClose())
        for junk in ["QU\u{1}RY /v1/packs HTTP/1.1\r\n\r\n", "QUERY /v1/packs\r\n\r\n", "QUERY /v1/packs HTTP/x.1\r\n\r\n", "QUERY  HTTP/1.1\r\n\r\n"] {
            let client = try server.client()
            #expect(try client.request(junk).status == 400, "\(junk.debugDescription)")
        }
    }

    /// A request line that never ends is bounded like a head: 431 past `maxHeaderBytes`, 408 past
    /// the header timeout.
    @Test func unknownMethodLineIsBoundedLikeAHead() throws {
        var limits = ServerLimits()
        limits.maxHeaderBytes = 256
        limits.headerTimeout = .milliseconds(300)
        let server = try TestServer(limits: limits) { router, _ in
            router.post("/v1/packs") { _, responder in responder.respond(.text("created")) }
        }
        defer { server.stop() }
        let long = try server.client()
        try long.send("QUERY /" + String(repeating: "a", count: 300))
        #expect(try long.readResponse().status == 431)
        let slow = try server.client()
        try slow.send("QUERY /v1/pa")
        #expect(try slow.readResponse().status == 408)
    }

    @Test func jsonBodyErrorsBecomeProblems() throws {
        let server = try server()
        defer { server.stop() }
        let created = try server.client().request("POST /v1/packs HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"name\":\"hk\"}")
        #expect(created.status == 201)
        let missing = try server.client().request("POST /v1/packs HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        #expect(missing.status == 400)
        #expect(missing.text.contains("/name"))
        let wrongType = try server.client().request("POST /v1/packs HTTP/1.1\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}")
        #expect(wrongType.status == 415)
    }

    @Test func problemCarriesFieldErrors() throws {
        let response = HTTPResponse.problem(.unprocessableContent, "invalid region", errors: [.init(pointer: "/region/max_zoom", detail: "above 30")])
        #expect(response.status.code == 422)
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        let errors = object?["errors"] as? [[String: String]]
        #expect(errors == [["pointer": "/region/max_zoom", "detail": "above 30"]])
        #expect(object?["status"] as? Int == 422)
    }

    @Test(arguments: [
        ("127.0.0.1:8080", "127.0.0.1", 8080),
        ("[::1]:0", "::1", 0),
        ("0.0.0.0:65535", "0.0.0.0", 65535),
    ])
    func listenAddressParses(text: String, host: String, port: Int) throws {
        let address = try ListenAddress(parsing: text)
        #expect(address.host == host)
        #expect(address.port == port)
        #expect(address.description == text)
    }

    @Test(arguments: ["localhost:80", "127.0.0.1", "127.0.0.1:65536", "127.1:80", "::1:80", "[::1]80", "1.2.3.4:-1", "1.2.3.4:8x"])
    func listenAddressRejects(text: String) {
        #expect(throws: ListenAddress.ParseError.self) { try ListenAddress(parsing: text) }
    }
}
