import Foundation
import Glibc
import PackdTestSupport
@testable import Server
import Testing

@Suite struct ParsingTests {
    /// Echoes method, path parameter, a header and the body, so a mis-parse shows in the answer.
    private func echoServer() throws -> TestServer {
        try TestServer { router, _ in
            router.post("/echo/{name}") { request, responder in
                let text = "\(request.method) \(request.parameters["name"] ?? "-") \(request.headers["X-Tag"] ?? "-") \(String(decoding: request.body, as: UTF8.self))"
                responder.respond(.text(text))
            }
        }
    }

    private let request = "POST /echo/caf%C3%A9 HTTP/1.1\r\nHost: example\r\nX-Tag: tagged\r\nContent-Length: 11\r\n\r\nhello world"
    private let chunkedRequest = "POST /echo/chunks HTTP/1.1\r\nHost: example\r\nX-Tag: c\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"

    @Test func requestFedOneByteAtATime() throws {
        let server = try echoServer()
        defer { server.stop() }
        let client = try server.client()
        for byte in Array(request.utf8) {
            let before = server.onLoop { server.server.receivedBytes }
            try client.send([byte])
            #expect(eventually { server.onLoop { server.server.receivedBytes } == before + 1 })
        }
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "POST café tagged hello world")
    }

    @Test(arguments: [false, true])
    func requestSplitAtEveryBoundary(chunked: Bool) throws {
        let server = try echoServer()
        defer { server.stop() }
        let bytes = Array((chunked ? chunkedRequest : request).utf8)
        let expected = chunked ? "POST chunks c hello world" : "POST café tagged hello world"
        let client = try server.client()
        for split in 1..<bytes.count {
            // The second part is sent only once the server has read the first: two reads.
            let before = server.onLoop { server.server.receivedBytes }
            try client.send(Array(bytes[..<split]))
            #expect(eventually { server.onLoop { server.server.receivedBytes } == before + split })
            try client.send(Array(bytes[split...]))
            let response = try client.readResponse()
            #expect(response.status == 200, "split at \(split)")
            #expect(response.text == expected, "split at \(split)")
        }
    }

    @Test func chunkedRequestBodyIsReassembled() throws {
        let server = try echoServer()
        defer { server.stop() }
        let response = try server.client().request(chunkedRequest)
        #expect(response.text == "POST chunks c hello world")
    }

    @Test func garbageGets400AndClose() throws {
        let server = try echoServer()
        defer { server.stop() }
        let client = try server.client()
        try client.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03] + Array("\r\n\r\n".utf8))
        let response = try client.readResponse()
        #expect(response.status == 400)
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.header("Connection") == "close")
        #expect(try client.waitForClose())
    }

    /// Mutated requests (seeded, so a failure reproduces): every connection ends with an answer
    /// or a close, and the server keeps serving.
    @Test func mutatedRequestsNeverBreakTheServer() throws {
        let server = try echoServer()
        defer { server.stop() }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33)
        }
        let seeds = [Array(request.utf8), Array(chunkedRequest.utf8)]
        for round in 0..<150 {
            var bytes = seeds[round % 2]
            for _ in 0..<(1 + next() % 4) {
                let index = next() % bytes.count
                switch next() % 3 {
                case 0: bytes[index] = UInt8(truncatingIfNeeded: next())
                case 1: bytes.remove(at: index)
                default: bytes.insert(UInt8(truncatingIfNeeded: next()), at: index)
                }
            }
            let client = try server.client(timeout: 5)
            try? client.send(bytes)
            // Half-close: a request still waiting for bytes is answered by the close.
            shutdown(client.fd, Int32(SHUT_WR))
            let answer = String(decoding: try client.readUntilClosed(), as: UTF8.self)
            #expect(answer.isEmpty || answer.hasPrefix("HTTP/1.1 "), "round \(round)")
        }
        #expect(try server.client().request(request).status == 200)
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() throws {
        let server = try echoServer()
        defer { server.stop() }
        let client = try server.client()
        let kept = try client.request("POST /echo/a HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi")
        #expect(kept.status == 200)
        #expect(kept.header("Connection")?.lowercased() == "keep-alive")
        let closed = try client.request("POST /echo/b HTTP/1.0\r\nContent-Length: 2\r\n\r\nho")
        #expect(closed.text == "POST b - ho")
        #expect(closed.header("Connection") == "close")
        #expect(try client.waitForClose())
    }

    @Test func expect100ContinueGetsInterimResponseBeforeBody() throws {
        let server = try echoServer()
        defer { server.stop() }
        let client = try server.client()
        try client.send("POST /echo/x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        let interim = try client.readResponse()
        #expect(interim.status == 100)
        try client.send("12345")
        let final = try client.readResponse()
        #expect(final.status == 200)
        #expect(final.text == "POST x - 12345")
    }
}
