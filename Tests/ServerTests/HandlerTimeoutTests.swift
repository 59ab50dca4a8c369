import Foundation
import Loop
import PackdTestSupport
import Server
import Testing

@Suite struct HandlerTimeoutTests {
    /// Responders a handler kept without answering, so the test can answer late.
    private final class Parked: @unchecked Sendable {
        var responders: [Responder] = []
        var cancelled = 0
    }

    private func server(timeout: Duration?, parked: Parked, log: CapturedLog? = nil) throws -> TestServer {
        var limits = ServerLimits()
        limits.handlerTimeout = timeout
        return try TestServer(limits: limits, log: log) { router, loop in
            router.get("/hello") { _, responder in responder.respond(.text("hello")) }
            router.get("/never") { _, responder in
                responder.onClose = { parked.cancelled += 1 }
                parked.responders.append(responder)
            }
            router.get("/patient", options: RouteOptions(handlerTimeout: .seconds(60))) { _, responder in
                parked.responders.append(responder)
            }
            router.get("/stream") { _, responder in
                let stream = responder.stream()
                stream.write(Array("first\n".utf8))
                parked.responders.append(responder)
                // Finishes well after the handler timeout: a started stream must not be cut.
                let timer = LoopTimer(loop: loop)
                timer.start(after: 600) {
                    stream.write(Array("second\n".utf8))
                    stream.finish()
                    timer.close()
                }
            }
        }
    }

    @Test func aHandlerThatNeverAnswersGets503AndTheConnectionCarriesOn() throws {
        let parked = Parked()
        let log = CapturedLog()
        let server = try server(timeout: .milliseconds(200), parked: parked, log: log)
        defer { server.stop() }
        let client = try server.client()
        // Pipelined: the answer after the stuck one must not wait behind it forever.
        try client.send("GET /never?access_token=SECRET HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n")
        let timedOut = try client.readResponse()
        #expect(timedOut.status == 503)
        let problem = try JSONDecoder().decode(Problem.self, from: Data(timedOut.body))
        #expect(problem.type == "urn:packd:problem:unavailable")
        #expect(timedOut.header("Connection") != "close")
        #expect(try client.readResponse().text == "hello")
        #expect(try client.request("GET /hello HTTP/1.1\r\n\r\n").text == "hello")

        // The handler's work was told to stop, and a late answer goes nowhere.
        #expect(server.onLoop { parked.cancelled } == 1)
        server.onLoop {
            parked.responders.first?.respond(.text("late"))
        }
        #expect(try client.request("GET /hello HTTP/1.1\r\n\r\n").text == "hello")
        #expect(log.entries.contains {
            $0.level == .warning && $0.message.contains("did not answer") && "\($0.metadata["path"] ?? "")" == "/never"
        })
        #expect(!log.entries.contains { "\($0.message) \($0.metadata)".contains("SECRET") })
    }

    @Test func aRouteCanAllowLongerAndNilDisablesTheBound() throws {
        let parked = Parked()
        let server = try server(timeout: .milliseconds(150), parked: parked)
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /patient HTTP/1.1\r\n\r\n")
        // Well past the server-wide bound, the patient route is still waiting for its handler.
        #expect(eventually { server.onLoop { parked.responders.count } == 1 })
        let waitedFrom = Date()
        #expect(!eventually(within: 0.6) { server.onLoop { !(parked.responders.first?.isOpen ?? false) } })
        #expect(Date().timeIntervalSince(waitedFrom) >= 0.6)
        server.onLoop { parked.responders.first?.respond(.text("finally")) }
        #expect(try client.readResponse().text == "finally")

        let unbounded = Parked()
        let free = try self.server(timeout: nil, parked: unbounded)
        defer { free.stop() }
        let other = try free.client()
        try other.send("GET /never HTTP/1.1\r\n\r\n")
        #expect(eventually { free.onLoop { unbounded.responders.count } == 1 })
        #expect(!eventually(within: 0.5) { free.onLoop { !(unbounded.responders.first?.isOpen ?? false) } })
        free.onLoop { unbounded.responders.first?.respond(.text("whenever")) }
        #expect(try other.readResponse().text == "whenever")
    }

    @Test func aStartedStreamIsNotCutByTheHandlerTimeout() throws {
        let parked = Parked()
        let server = try server(timeout: .milliseconds(100), parked: parked)
        defer { server.stop() }
        let response = try server.client().request("GET /stream HTTP/1.1\r\n\r\n")
        #expect(response.status == 200)
        #expect(response.text == "first\nsecond\n")
    }
}
