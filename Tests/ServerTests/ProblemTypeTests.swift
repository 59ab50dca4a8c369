import Foundation
import PackdTestSupport
import Server
import Testing

/// Every error the server makes up itself carries a documented problem URN with its kind's
/// title, and the kinds are exactly openapi.yaml's table.
@Suite struct ProblemTypeTests {
    private func server(_ limits: ServerLimits = ServerLimits()) throws -> TestServer {
        try TestServer(limits: limits) { router, _ in
            router.get("/hello") { _, responder in responder.respond(.text("hello")) }
            router.get("/things/{id}") { _, responder in responder.respond(.text("thing")) }
            router.post("/upload") { request, responder in responder.respond(.text("\(request.body.count)")) }
            router.get("/bug") { _, responder in responder.respond(.problem(.internalServerError, "a bug")) }
        }
    }

    /// Reads one problem response and checks status line, media type, URN and title together.
    private func expectProblem(_ response: TestResponse, _ kind: Problem.Kind, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(response.status == kind.status.code, sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        let problem = try JSONDecoder().decode(Problem.self, from: Data(response.body))
        #expect(problem.type == "urn:packd:problem:\(kind.rawValue)", sourceLocation: sourceLocation)
        #expect(problem.title == kind.title, sourceLocation: sourceLocation)
        #expect(problem.status == kind.status.code, sourceLocation: sourceLocation)
    }

    @Test func serverGeneratedErrorsUseTheDocumentedURNs() throws {
        var limits = ServerLimits()
        limits.maxBodyBytes = 10
        limits.maxHeaderBytes = 2048
        let server = try server(limits)
        defer { server.stop() }

        try expectProblem(try server.client().request("GARBAGE\r\n\r\n"), .malformedRequest)
        try expectProblem(try server.client().request("GET /things/%FF HTTP/1.1\r\n\r\n"), .malformedRequest)
        try expectProblem(try server.client().request("GET /nowhere HTTP/1.1\r\n\r\n"), .notFound)
        try expectProblem(try server.client().request("DELETE /hello HTTP/1.1\r\n\r\n"), .methodNotAllowed)
        try expectProblem(try server.client().request("POST /upload HTTP/1.1\r\nContent-Length: 11\r\n\r\n"), .payloadTooLarge)
        let filler = String(repeating: "a", count: 4096)
        let big = try server.client()
        try? big.send("GET /hello HTTP/1.1\r\nX-Filler: \(filler)\r\n\r\n")
        try expectProblem(try big.readResponse(), .headersTooLarge)
        try expectProblem(try server.client().request("GET /bug HTTP/1.1\r\n\r\n"), .internalError)
        try expectProblem(try server.client().request("GET /hello HTTP/1.1\r\nExpect: 200-ok\r\n\r\n"), .expectationFailed)
    }

    @Test func statusLineKeepsTheStandardReasonPhrase() throws {
        let server = try server()
        defer { server.stop() }
        let raw = try server.client()
        try raw.send("GET /nowhere HTTP/1.1\r\nConnection: close\r\n\r\n")
        let all = String(decoding: try raw.readUntilClosed(), as: UTF8.self)
        // The problem's title ("Not found") must not leak into the status line.
        #expect(all.hasPrefix("HTTP/1.1 404 Not Found\r\n"), "got \(all.prefix(40))")
    }

    @Test func timeoutAndConnectionCapUseTheDocumentedURNs() throws {
        var limits = ServerLimits()
        limits.headerTimeout = .milliseconds(200)
        limits.maxConnections = 1
        let server = try server(limits)
        defer { server.stop() }
        let slow = try server.client()
        try slow.send("GET /hello HTTP/1.1\r\nX-Half: ")
        try expectProblem(try slow.readResponse(), .requestTimeout)
        #expect(try slow.waitForClose())
        #expect(eventually { server.onLoop { server.server.connectionCount } == 0 })

        let held = try server.client()
        #expect(try held.request("GET /hello HTTP/1.1\r\n\r\n").status == 200)
        try expectProblem(try server.client().readResponse(), .unavailable)
    }

    @Test func expectOtherThan100ContinueIs417AndTheConnectionContinues() throws {
        let server = try server()
        defer { server.stop() }
        let client = try server.client()
        let refused = try client.request("GET /hello HTTP/1.1\r\nExpect: something-else\r\n\r\n")
        try expectProblem(refused, .expectationFailed)
        #expect(refused.text.contains("something-else"))
        // Without a body, nothing is left unread: the same connection serves the next request.
        #expect(try client.request("GET /hello HTTP/1.1\r\n\r\n").text == "hello")
        // With a body it cannot skip safely, so it closes; the body was never handed to a handler.
        let upload = try server.client()
        let withBody = try upload.request("POST /upload HTTP/1.1\r\nExpect: 100-continue, fancy\r\nContent-Length: 3\r\n\r\nabc")
        try expectProblem(withBody, .expectationFailed)
        #expect(withBody.header("Connection") == "close")
        #expect(try upload.waitForClose())
    }

    @Test func fieldErrorLocatesByPointerOrParameter() throws {
        let response = HTTPResponse.problem(.badRequest, "bad query", errors: [
            .init(parameter: "after", detail: "not an event id"),
            .init(pointer: "/name", detail: "too long"),
        ])
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        let errors = object?["errors"] as? [[String: String]]
        #expect(errors == [["parameter": "after", "detail": "not an event id"], ["pointer": "/name", "detail": "too long"]])
        #expect(object?["type"] as? String == "urn:packd:problem:malformed-request")
        let decoded = try JSONDecoder().decode(Problem.self, from: Data(response.body))
        #expect(decoded.errors?.first?.parameter == "after")
        #expect(decoded.errors?.first?.pointer == nil)
    }

    /// The Swift list and openapi.yaml's table of problem types must not drift apart.
    @Test func kindsAreExactlyTheTableOfOpenAPI() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let yaml = try String(contentsOf: root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        var documented: [String: Int] = [:]
        for line in yaml.split(separator: "\n") where line.contains("| `urn:packd:problem:") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard cells.count >= 2, let status = Int(cells[1]) else { continue }
            documented[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = status
        }
        let coded = Dictionary(uniqueKeysWithValues: Problem.Kind.allCases.map { ($0.uri, $0.status.code) })
        #expect(!documented.isEmpty)
        #expect(documented == coded)
    }
}
