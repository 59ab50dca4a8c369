import Foundation
import Glibc
import Logging
import Loop
import Server

/// Raw bytes on one connection to an `HTTPServer` with small limits (2 KiB heads, 4 KiB bodies,
/// a route allowing 64 KiB, a streamed upload route, pipelining at most 4 deep). The client sends
/// the input, half-closes, and reads until the server closes. The server must answer with
/// well-formed responses only, close within its own timeouts, and keep no connection open.
final class HTTPRequestTarget: @unchecked Sendable {
    static let shared = HTTPRequestTarget()

    let thread: LoopThread
    let server: HTTPServer
    let port: Int

    private init() {
        var limits = ServerLimits()
        limits.maxHeaderBytes = 2048
        limits.maxBodyBytes = 4096
        limits.headerTimeout = .seconds(2)
        limits.bodyTimeout = .seconds(2)
        limits.idleTimeout = .seconds(2)
        limits.writeTimeout = .seconds(2)
        limits.lingerTimeout = .milliseconds(50)
        limits.maxLingerBytes = 16 << 10
        limits.maxPipelinedRequests = 4
        limits.handlerTimeout = .seconds(2)
        var router = Router()
        router.get("/hello") { _, responder in responder.respond(.text("hello")) }
        router.get("/items/{id}") { request, responder in responder.respond(.text(request.parameters["id"] ?? "")) }
        router.post("/echo") { request, responder in responder.respond(HTTPResponse(status: .ok, body: request.body)) }
        router.put("/big", options: RouteOptions(maxBodyBytes: 64 << 10)) { request, responder in
            responder.respond(.text("\(request.body.count)"))
        }
        router.post("/upload", options: RouteOptions(maxBodyBytes: 64 << 10, body: .streamed)) { request, responder in
            guard let stream = request.bodyStream else { return responder.respond(.text("no stream", status: .badRequest)) }
            var total = 0
            stream.onChunk = { total += $0.count }
            stream.onEnd = { responder.respond(.text("\(total)")) }
            stream.onFailure = { _ in }
        }
        nonisolated(unsafe) let routes = router
        do {
            let thread = try LoopThread(name: "fuzz-server")
            let (server, port) = try thread.sync { () -> (HTTPServer, Int) in
                let server = HTTPServer(loop: thread.loop, router: routes, limits: limits,
                                        logger: Logger(label: "fuzz") { _ in SwiftLogNoOpLogHandler() })
                let address = try server.start(listeningOn: ListenAddress(parsing: "127.0.0.1:0"))
                return (server, address.port)
            }
            self.thread = thread
            self.server = server
            self.port = port
        } catch {
            fatalError("cannot start the server: \(error)")
        }
    }

    func run(_ bytes: [UInt8]) {
        let fd = LoopbackSocket.connect(port: port, timeoutSeconds: 10)
        defer { close(fd) }
        LoopbackSocket.send(fd, bytes)
        shutdown(fd, Int32(SHUT_WR))
        guard let answer = LoopbackSocket.readToEnd(fd, limit: 1 << 20) else {
            fatalError("hang: the server neither answered nor closed within 10 s")
        }
        // A HEAD response declares a length it does not send; bodies are then not walked.
        checkResponses(answer, walkBodies: bytes.firstRange(of: Array("HEAD".utf8)) == nil)
        // The connection is gone from the server too (closing is asynchronous: wait for it).
        let deadline = Date() + 10
        while (try? thread.sync { self.server.connectionCount }) != 0 {
            invariant(Date() < deadline, "the server kept a closed connection")
            usleep(100)
        }
    }

    /// Every response starts with a status line (HTTP/1.1, or 1.0 to a 1.0 client) and has a framed body.
    private func checkResponses(_ answer: [UInt8], walkBodies: Bool) {
        var rest = answer[...]
        while !rest.isEmpty {
            invariant(rest.starts(with: Array("HTTP/1.1 ".utf8)) || rest.starts(with: Array("HTTP/1.0 ".utf8)), "not a status line: \(String(decoding: rest.prefix(40), as: UTF8.self))")
            guard let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) else {
                fatalError("response head without an end: \(String(decoding: rest.prefix(200), as: UTF8.self))")
            }
            let head = String(decoding: rest[..<end.lowerBound], as: UTF8.self).lowercased()
            let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
            invariant(!head.contains("transfer-encoding:"), "no route streams, yet: \(head)")
            guard walkBodies else { return }
            let bodyStart = end.upperBound
            let bodyLength = length ?? 0
            invariant(rest.distance(from: bodyStart, to: rest.endIndex) >= bodyLength, "a response body was cut short")
            rest = rest[rest.index(bodyStart, offsetBy: bodyLength)...]
        }
    }
}
