import Foundation
import Glibc
import Loop
import PackdTestSupport
import Server
import Testing

@Suite struct StreamingTests {
    @Test func streamedResponseIsChunkedAndComplete() throws {
        let server = try TestServer { router, _ in
            router.get("/events") { _, responder in
                let stream = responder.stream(headers: ["Content-Type": "text/event-stream"])
                for index in 0..<3 { stream.write("data: \(index)\n\n") }
                stream.finish()
            }
        }
        defer { server.stop() }
        let client = try server.client()
        let response = try client.request("GET /events HTTP/1.1\r\n\r\n")
        #expect(response.chunked)
        #expect(response.text == "data: 0\n\ndata: 1\n\ndata: 2\n\n")
        // Keep-alive survives a chunked response.
        #expect(try client.request("GET /events HTTP/1.1\r\n\r\n").chunked)
    }

    /// A client that does not read: the producer is told to wait, and the bytes the server holds
    /// stay near the high-water mark instead of growing with the body.
    /// Per-connection memory is returned: once a streamed response is written (or its client is
    /// gone) the stream the handler made is released as soon as the handler lets go of it.
    /// Responder and stream used to hold each other for good, keeping the connection — and through
    /// it the server and every route — alive (LeakSanitizer, `make sanitize`).
    @Test func aStreamIsReleasedOnceItsResponseIsWrittenOrItsClientIsGone() throws {
        let finished = Weak<ResponseStream>()
        let abandoned = Weak<ResponseStream>()
        let held = Shared<ResponseStream?>(nil)
        let server = try TestServer { router, _ in
            router.get("/finished") { _, responder in
                let stream = responder.stream(headers: ["Content-Type": "text/plain"])
                finished.value = stream
                stream.write("hello")
                stream.finish()
            }
            router.get("/endless") { _, responder in
                let stream = responder.stream(headers: ["Content-Type": "text/event-stream"])
                abandoned.value = stream
                // Held like an event subscriber holds its stream: until the client goes away.
                held.update { $0 = stream }
                stream.onClose = { held.update { $0 = nil } }
                stream.write(":ok\n\n")
            }
        }
        defer { server.stop() }
        let client = try server.client()
        let response = try client.request("GET /finished HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(response.text == "hello")
        #expect(try client.waitForClose())
        #expect(eventually { server.onLoop { finished.value == nil } })

        let listener = try server.client()
        try listener.send("GET /endless HTTP/1.1\r\n\r\n")
        #expect(try listener.receiveMore())
        #expect(server.onLoop { abandoned.value != nil })
        shutdown(listener.fd, Int32(SHUT_RDWR))
        #expect(eventually { server.onLoop { abandoned.value == nil && server.server.connectionCount == 0 } })
    }

    @Test func slowReaderBoundsWhatTheServerQueues() throws {
        var limits = ServerLimits()
        limits.writeHighWaterMark = 64 * 1024
        let total = 32 << 20
        let produced = Shared(0)
        let maxQueued = Shared(0)
        let server = try TestServer(limits: limits) { router, _ in
            router.get("/download") { _, responder in
                let stream = responder.stream(headers: ["Content-Type": "application/octet-stream"], contentLength: total)
                let block = [UInt8](repeating: 0x5a, count: 16 * 1024)
                var sent = 0
                func pump() {
                    while stream.canWrite && sent < total {
                        stream.write(block)
                        sent += block.count
                        produced.update { $0 = sent }
                    }
                    if sent >= total { stream.finish() }
                }
                stream.onWritable = pump
                pump()
            }
        }
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /download HTTP/1.1\r\n\r\n")
        // Wait until production stalls: nothing is read, so the socket buffers fill up.
        var last = -1
        #expect(eventually {
            let now = produced.current
            defer { last = now }
            let queued = server.onLoop { server.server.queuedBytes }
            maxQueued.update { $0 = max($0, queued) }
            return now > 0 && now == last && queued > 0
        })
        #expect(produced.current < total / 2)
        #expect(maxQueued.current <= limits.writeHighWaterMark + 16 * 1024)
        // Reading everything lets the producer finish, and every byte arrives.
        let response = try client.readResponse()
        #expect(response.body.count == total)
        #expect(produced.current == total)
    }

    /// A client that never reads is dropped once writes make no progress for `writeTimeout`,
    /// and the producer hears about it.
    @Test func stuckReaderIsDroppedAfterTheWriteTimeout() throws {
        var limits = ServerLimits()
        limits.writeTimeout = .milliseconds(300)
        let closed = Shared(false)
        let server = try TestServer(limits: limits) { router, _ in
            router.get("/flood") { _, responder in
                let stream = responder.stream()
                let block = [UInt8](repeating: 0x41, count: 64 * 1024)
                func pump() { while stream.canWrite { stream.write(block) } }
                stream.onWritable = pump
                stream.onClose = { closed.update { $0 = true } }
                pump()
            }
        }
        defer { server.stop() }
        let client = try server.client()
        client.setTimeout(30)
        var small: Int32 = 4096
        setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        try client.send("GET /flood HTTP/1.1\r\n\r\n")
        let started = Date()
        #expect(eventually { closed.current })
        #expect(Date().timeIntervalSince(started) >= 0.29)
        #expect(eventually { server.onLoop { server.server.connectionCount } == 0 })
    }

    @Test func streamedRequestBodyArrivesInChunksWithoutBuffering() throws {
        let chunks = Shared<[Int]>([])
        let server = try TestServer { router, _ in
            router.post("/imports", options: RouteOptions(maxBodyBytes: 8 << 20, body: .streamed)) { request, responder in
                #expect(request.body.isEmpty)
                guard let body = request.bodyStream else {
                    responder.respond(.problem(.internalServerError, "no stream"))
                    return
                }
                var sum = 0
                body.onChunk = { bytes in
                    chunks.update { $0.append(bytes.count) }
                    sum += bytes.reduce(0) { $0 + Int($1) }
                }
                body.onEnd = { responder.respond(.text("\(body.receivedBytes) \(sum)")) }
            }
        }
        defer { server.stop() }
        let size = 4 << 20
        let payload = (0..<size).map { UInt8($0 % 251) }
        let client = try server.client()
        try client.send("POST /imports HTTP/1.1\r\nContent-Length: \(size)\r\n\r\n")
        try client.send(payload)
        let response = try client.readResponse()
        #expect(response.text == "\(size) \(payload.reduce(0) { $0 + Int($1) })")
        #expect(chunks.current.count > 1)
        #expect(chunks.current.max() ?? 0 <= 64 * 1024)
    }

    /// A consumer that pauses on every chunk and resumes after work on another thread (as an
    /// import writing to disk does) still receives the whole body, and the socket is not read
    /// while it is paused.
    @Test func pausedUploadConsumerHoldsTheClientBack() throws {
        let pausedReads = Shared(0)
        let server = try TestServer { router, loop in
            router.post("/imports", options: RouteOptions(maxBodyBytes: 8 << 20, body: .streamed)) { request, responder in
                guard let body = request.bodyStream else { return }
                var received = 0
                let paused = Shared(false)
                body.onChunk = { bytes in
                    if paused.current { pausedReads.update { $0 += 1 } }
                    received += bytes.count
                    if !paused.current {
                        paused.update { $0 = true }
                        body.pause()
                        DispatchQueue.global().async {
                            loop.execute {
                                paused.update { $0 = false }
                                body.resume()
                            }
                        }
                    }
                }
                body.onEnd = { responder.respond(.text("\(received)")) }
            }
        }
        defer { server.stop() }
        let size = 2 << 20
        let client = try server.client()
        try client.send("POST /imports HTTP/1.1\r\nContent-Length: \(size)\r\n\r\n")
        try client.send([UInt8](repeating: 7, count: size))
        #expect(try client.readResponse().text == "\(size)")
        // Chunks that arrive while paused are only those already read from one socket read:
        // the rest of a 64 KiB read buffer at most, never a whole stream of reads.
        #expect(pausedReads.current < size / 1024)
    }

    /// An upload refused before its body is read (an auth refusal, a 415) on a `Connection:
    /// close` request: the answer goes out and the connection closes after the short lingering
    /// close, instead of waiting out the body timeout for a body the client stopped sending.
    @Test func uploadAnsweredBeforeItsBodyClosesWithoutAwaitingTheBody() throws {
        var limits = ServerLimits()
        limits.bodyTimeout = .seconds(600)
        let server = try TestServer(limits: limits) { router, _ in
            router.post("/imports", options: RouteOptions(maxBodyBytes: 8 << 20, body: .streamed)) { _, responder in
                responder.respond(HTTPResponse(status: .unauthorized, body: Array("no".utf8)))
            }
        }
        defer { server.stop() }
        let client = try server.client()
        try client.send("POST /imports HTTP/1.1\r\nConnection: close\r\nContent-Length: 1000000\r\n\r\n")
        try client.send([UInt8](repeating: 7, count: 1000))
        let started = ContinuousClock.now
        #expect(try client.readResponse().status == 401)
        #expect(try client.waitForClose())
        // The lingering close lasts 2 s; the body timeout (600 s) is what a regression waits for.
        #expect(ContinuousClock.now - started < .seconds(60))
        #expect(eventually { server.onLoop { server.server.connectionCount } == 0 })
    }

    @Test func abortedStreamIsVisiblyTruncatedAndAbortedRequestGetsNoAnswer() throws {
        let server = try TestServer { router, _ in
            router.get("/truncated") { _, responder in
                let stream = responder.stream(contentLength: 100)
                stream.write([UInt8](repeating: 1, count: 40))
                stream.abort()
            }
            router.get("/reset") { _, responder in responder.abortConnection() }
        }
        defer { server.stop() }
        let truncated = try server.client()
        try truncated.send("GET /truncated HTTP/1.1\r\n\r\n")
        let bytes = try truncated.readUntilClosed()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(text.contains("Content-Length: 100"))
        #expect(bytes.count - ((TestResponse.find([13, 10, 13, 10], in: bytes, from: 0) ?? 0) + 4) == 40)
        let reset = try server.client()
        try reset.send("GET /reset HTTP/1.1\r\n\r\n")
        #expect(try reset.readUntilClosed().isEmpty)
    }

    @Test func clientDisconnectIsReportedToTheStream() throws {
        let closed = Shared(false)
        let opened = Shared(false)
        let server = try TestServer { router, _ in
            router.get("/sse") { _, responder in
                let stream = responder.stream(headers: ["Content-Type": "text/event-stream"])
                stream.write(": hello\n\n")
                stream.onClose = { closed.update { $0 = true } }
                opened.update { $0 = true }
            }
        }
        defer { server.stop() }
        var client: RawClient? = try server.client()
        try client?.send("GET /sse HTTP/1.1\r\n\r\n")
        #expect(eventually { opened.current })
        client = nil
        #expect(eventually { closed.current })
        #expect(eventually { server.onLoop { server.server.connectionCount } == 0 })
    }

    @Test func gracefulShutdownFinishesAStreamInFlight() throws {
        let started = Shared(false)
        let server = try TestServer { router, loop in
            router.get("/slow") { _, responder in
                let stream = responder.stream()
                started.update { $0 = true }
                var count = 0
                let timer = LoopTimer(loop: loop)
                timer.start(after: 20, repeat: 20) {
                    count += 1
                    stream.write("tick \(count)\n")
                    if count == 10 {
                        timer.close()
                        stream.finish()
                    }
                }
            }
        }
        let client = try server.client()
        try client.send("GET /slow HTTP/1.1\r\n\r\n")
        #expect(eventually { started.current })
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) let http = server.server
        server.thread.loop.execute { http.shutdown(gracePeriod: .seconds(20)) { done.signal() } }
        let response = try client.readResponse()
        #expect(response.text == (1...10).map { "tick \($0)\n" }.joined())
        #expect(try client.waitForClose())
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(throws: (any Error).self) { try server.client().request("GET /slow HTTP/1.1\r\n\r\n") }
        server.thread.shutdown()
    }
}

/// A weak reference a test can read after the object's owners are gone.
final class Weak<Object: AnyObject>: @unchecked Sendable {
    weak var value: Object?
}
