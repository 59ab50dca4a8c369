import Foundation
import Loop
import Server
import Testing

@Suite struct KeepAliveTests {
    @Test func keepAliveReusesOneConnection() throws {
        let server = try TestServer { router, _ in
            router.get("/hello") { _, responder in responder.respond(.text("hello")) }
        }
        defer { server.stop() }
        let client = try server.client()
        for _ in 0..<5 {
            let response = try client.request("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(response.status == 200)
            #expect(response.text == "hello")
            #expect(response.header("Connection") == nil)
        }
        #expect(server.onLoop { server.server.connectionCount } == 1)
    }

    @Test func hundredPipelinedRequestsAnswerInOrderWhateverOrderHandlersFinish() throws {
        let server = try TestServer { router, loop in
            // Earlier requests are answered later: request n waits (100 - n) ms.
            router.get("/item/{n}") { request, responder in
                let n = Int(request.parameters["n"] ?? "") ?? 0
                let timer = LoopTimer(loop: loop)
                timer.start(after: UInt64(100 - n)) {
                    timer.close()
                    responder.respond(.text("item \(n)"))
                }
            }
        }
        defer { server.stop() }
        let client = try server.client()
        let burst = (0..<100).map { "GET /item/\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined()
        try client.send(burst)
        for n in 0..<100 {
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(response.text == "item \(n)")
        }
    }

    @Test func idleKeepAliveConnectionIsClosedAfterTheTimeout() throws {
        var limits = ServerLimits()
        limits.idleTimeout = .milliseconds(200)
        let server = try TestServer(limits: limits) { router, _ in
            router.get("/hello") { _, responder in responder.respond(.text("hello")) }
        }
        defer { server.stop() }
        let client = try server.client()
        let started = Date()
        #expect(try client.request("GET /hello HTTP/1.1\r\n\r\n").status == 200)
        #expect(try client.readUntilClosed().isEmpty)
        #expect(Date().timeIntervalSince(started) >= 0.19)
        #expect(eventually { server.onLoop { server.server.connectionCount } == 0 })
    }
}
