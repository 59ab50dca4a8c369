import Foundation
import Glibc
import PackdTestSupport
import Server
import Testing

@Suite struct LimitTests {
    private func server(_ limits: ServerLimits = ServerLimits()) throws -> TestServer {
        try TestServer(limits: limits) { router, _ in
            router.get("/hello") { _, responder in responder.respond(.text("hello")) }
            router.post("/upload") { request, responder in responder.respond(.text("\(request.body.count)")) }
            router.post("/big", options: RouteOptions(maxBodyBytes: 100_000)) { request, responder in
                responder.respond(.text("\(request.body.count)"))
            }
        }
    }

    @Test func headersOf64KiBGet431() throws {
        let server = try server()
        defer { server.stop() }
        let client = try server.client()
        let filler = String(repeating: "a", count: 1000)
        let headers = (0..<64).map { "X-Filler-\($0): \(filler)\r\n" }.joined()
        // The server may answer and close before the whole head is sent.
        try? client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\(headers)\r\n")
        let response = try client.readResponse()
        #expect(response.status == 431)
        #expect(try client.waitForClose())
    }

    @Test func overLimitBodyGets413WithoutTheBodyBeingRead() throws {
        var limits = ServerLimits()
        limits.maxBodyBytes = 1000
        let server = try server(limits)
        defer { server.stop() }
        let client = try server.client()
        let declared = 64 << 20
        try client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: \(declared)\r\n\r\n")
        // A writer that keeps sending until the server stops taking bytes.
        let sender = Thread { [client] in
            let block = [UInt8](repeating: 0x61, count: 65536)
            while client.sentBytes < declared {
                do { try client.send(block) } catch { return }
            }
        }
        sender.start()
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.header("Connection") == "close")
        #expect(try client.waitForClose())
        #expect(eventually { sender.isFinished })
        #expect(client.sentBytes < declared / 2)
    }

    @Test func chunkedBodyOverLimitGets413() throws {
        var limits = ServerLimits()
        limits.maxBodyBytes = 10
        let server = try server(limits)
        defer { server.stop() }
        let client = try server.client()
        try? client.send("POST /upload HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n")
        #expect(try client.readResponse().status == 413)
    }

    @Test func routeOverridesTheBodyLimit() throws {
        var limits = ServerLimits()
        limits.maxBodyBytes = 10
        let server = try server(limits)
        defer { server.stop() }
        let body = String(repeating: "b", count: 50_000)
        let accepted = try server.client().request("POST /big HTTP/1.1\r\nContent-Length: 50000\r\n\r\n\(body)")
        #expect(accepted.text == "50000")
        let refused = try server.client().request("POST /upload HTTP/1.1\r\nContent-Length: 50000\r\n\r\n")
        #expect(refused.status == 413)
    }

    @Test func halfAHeaderIsTimedOutWith408AndClosed() throws {
        var limits = ServerLimits()
        limits.headerTimeout = .milliseconds(300)
        let server = try server(limits)
        defer { server.stop() }
        let client = try server.client()
        let started = Date()
        try client.send("GET /hello HTTP/1.1\r\nHost: x\r\nX-Half: ")
        let response = try client.readResponse()
        #expect(response.status == 408)
        #expect(Date().timeIntervalSince(started) >= 0.29)
        #expect(try client.waitForClose())
    }

    @Test func stalledBodyIsTimedOutWith408() throws {
        var limits = ServerLimits()
        limits.bodyTimeout = .milliseconds(300)
        let server = try server(limits)
        defer { server.stop() }
        let client = try server.client()
        try client.send("POST /upload HTTP/1.1\r\nContent-Length: 10\r\n\r\n12345")
        #expect(try client.readResponse().status == 408)
        #expect(try client.waitForClose())
    }

    @Test func connectionsBeyondTheCapGet503() throws {
        var limits = ServerLimits()
        limits.maxConnections = 4
        let server = try server(limits)
        defer { server.stop() }
        var held: [RawClient] = []
        for _ in 0..<4 {
            let client = try server.client()
            #expect(try client.request("GET /hello HTTP/1.1\r\n\r\n").status == 200)
            held.append(client)
        }
        let extra = try server.client()
        let refused = try extra.readResponse()
        #expect(refused.status == 503)
        #expect(try extra.waitForClose())
        // The held connections still work, and a freed slot is usable again.
        #expect(try held[0].request("GET /hello HTTP/1.1\r\n\r\n").status == 200)
        held.removeLast()
        #expect(eventually { server.onLoop { server.server.connectionCount } == 3 })
        #expect(try server.client().request("GET /hello HTTP/1.1\r\n\r\n").status == 200)
    }

    @Test func thousandConcurrentConnectionsEachGetAnAnswer() throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < 4096 {
            limit.rlim_cur = min(4096, limit.rlim_max)
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        try #require(limit.rlim_cur >= 2200, "needs 2,200 file descriptors, the hard limit is \(limit.rlim_max)")
        let server = try server()
        defer { server.stop() }
        var clients: [RawClient] = []
        for _ in 0..<1000 { clients.append(try server.client()) }
        for client in clients { try client.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n") }
        var answered = 0
        for client in clients where try client.readResponse().status == 200 { answered += 1 }
        #expect(answered == 1000)
        #expect(server.onLoop { server.server.connectionCount } == 1000)
    }
}
