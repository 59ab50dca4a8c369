import Foundation
import Loop
import PackdTestSupport
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

@Suite struct PipelineBackpressureTests {
    /// Handlers that hold their answers: the server reads only `maxPipelinedRequests` ahead, and
    /// reads on as answers go out, so a pipelining client cannot make it queue requests.
    @Test func readingPausesWhileTooManyAnswersAreOutstanding() throws {
        var limits = ServerLimits()
        limits.maxPipelinedRequests = 8
        let held = Shared<[Responder]>([])
        let server = try TestServer(limits: limits) { router, _ in
            router.get("/hold/{n}") { request, responder in
                held.update { $0.append(responder) }
            }
        }
        defer { server.stop() }
        let client = try server.client()
        let total = 200
        try client.send((0..<total).map { "GET /hold/\($0) HTTP/1.1\r\n\r\n" }.joined())
        var answered = 0
        while answered < total {
            #expect(eventually { held.current.count > answered })
            let batch = held.current
            // Never more requests read than the limit allows beyond those answered.
            #expect(batch.count - answered <= 8)
            #expect(server.onLoop { server.server.pendingResponses } <= 8)
            server.onLoop {
                for (index, responder) in batch.enumerated().dropFirst(answered) {
                    responder.respond(.text("\(index)"))
                }
            }
            answered = batch.count
        }
        for index in 0..<total {
            #expect(try client.readResponse().text == "\(index)")
        }
    }

    @Test func answerFromAnotherThreadArrives() throws {
        let server = try TestServer { router, _ in
            router.get("/later") { _, responder in
                DispatchQueue.global().async { responder.respondFromAnyThread(.text("from afar")) }
            }
        }
        defer { server.stop() }
        #expect(try server.client().request("GET /later HTTP/1.1\r\n\r\n").text == "from afar")
    }

    @Test func headerValuesCannotSplitTheResponse() throws {
        let server = try TestServer { router, _ in
            router.get("/inject") { request, responder in
                let value = request.queryValue("v") ?? ""
                responder.respond(HTTPResponse(status: .ok, headers: ["X-Echo": value], body: Array("body".utf8)))
            }
        }
        defer { server.stop() }
        let response = try server.client().request("GET /inject?v=a%0D%0ASet-Cookie:%20x=1 HTTP/1.1\r\n\r\n")
        #expect(response.header("Set-Cookie") == nil)
        #expect(response.header("X-Echo") == "a  Set-Cookie: x=1")
        #expect(response.text == "body")
    }
}
