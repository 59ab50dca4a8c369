import Foundation
import PackdTestSupport
@testable import Server
import Testing

@Suite struct HealthRoutesTests {
    private func server(started: Shared<Bool> = Shared(true)) throws -> TestServer {
        try TestServer { router, _ in
            HealthRoutes(isStarted: { started.current }).register(in: &router)
        }
    }

    @Test func livenessAndReadinessAnswerTheDocumentedJSON() throws {
        let server = try server()
        defer { server.stop() }
        let client = try server.client()
        let health = try client.request("GET /healthz HTTP/1.1\r\n\r\n")
        #expect(health.status == 200)
        #expect(health.header("Content-Type") == "application/json")
        #expect(health.text == #"{"status":"ok"}"#)
        let ready = try client.request("GET /readyz HTTP/1.1\r\n\r\n")
        #expect(ready.status == 200)
        #expect(ready.text == #"{"status":"ready"}"#)
        #expect(ready.header("Cache-Control") == "no-store")
    }

    @Test func readinessIs503WhileNotStarted() throws {
        let started = Shared(false)
        let server = try server(started: started)
        defer { server.stop() }
        let client = try server.client()
        let starting = try client.request("GET /readyz HTTP/1.1\r\n\r\n")
        #expect(starting.status == 503)
        #expect(starting.text == #"{"status":"starting"}"#)
        // Liveness does not depend on readiness.
        #expect(try client.request("GET /healthz HTTP/1.1\r\n\r\n").status == 200)
        started.update { $0 = true }
        #expect(try client.request("GET /readyz HTTP/1.1\r\n\r\n").status == 200)
    }

    /// A readiness probe already being read when graceful shutdown begins is still answered,
    /// and says 503 `shutting_down`: the flip is visible to the client, not only internal state.
    @Test func readinessIs503OnceShutdownBegins() throws {
        let server = try server()
        let client = try server.client()
        #expect(try client.request("GET /readyz HTTP/1.1\r\n\r\n").status == 200)
        let head = "GET /readyz HTTP/1.1\r\nContent-Length: 1\r\n\r\n"
        let before = server.onLoop { server.server.receivedBytes }
        try client.send(head)
        #expect(eventually { server.onLoop { server.server.receivedBytes } >= before + head.utf8.count })

        let stopped = Shared(false)
        nonisolated(unsafe) let http = server.server
        server.thread.loop.execute { http.shutdown(gracePeriod: .seconds(20)) { stopped.update { $0 = true } } }
        #expect(eventually { server.onLoop { server.server.isShuttingDown } })
        try client.send("x")
        let response = try client.readResponse()
        #expect(response.status == 503)
        #expect(response.text == #"{"status":"shutting_down"}"#)
        #expect(response.header("Connection") == "close")
        #expect(try client.waitForClose())
        #expect(eventually { stopped.current })
        server.thread.shutdown()
    }
}
