import Foundation
import Glibc

/// A deliberately misbehaving HTTP/1.1 upstream on 127.0.0.1 for tests: plain POSIX sockets, a
/// thread per connection, keep-alive, and a script deciding each reply — a normal response, a
/// reset, a truncated body, a slow drip, or no answer at all. It records what it was asked, so
/// tests can assert what reached the upstream (credentials, conditional headers, concurrency).
public final class TestUpstream: @unchecked Sendable {
    public struct Request: Sendable {
        public let method: String
        public let target: String
        /// Lower-cased names.
        public let headers: [String: String]
        public let receivedAt: ContinuousClock.Instant
        /// What a request with `Content-Length` sent (a webhook's POST).
        public var body: [UInt8] = []
        /// Requests the upstream was serving when this one arrived, this one included (what an
        /// upstream limiting concurrency, or slowing under it, decides by).
        public internal(set) var concurrent = 1
    }

    public indirect enum Reply: Sendable {
        case respond(status: Int, headers: [(String, String)] = [], body: [UInt8] = [])
        /// Closes with an RST (SO_LINGER 0) instead of answering.
        case reset
        /// Declares `declared` bytes, sends `body`, closes.
        case truncate(declared: Int, body: [UInt8])
        /// Sends the response in `chunk`-byte pieces with `interval` between them.
        case drip(body: [UInt8], chunk: Int, interval: Duration)
        /// Sends these bytes as they are (status line, headers, body), then closes.
        case raw([UInt8])
        /// A status and headers declaring `declared` bytes, then zeros in 64 KiB chunks until the
        /// client hangs up (or `declared` are sent); `sent` hears how many body bytes went out.
        case endless(status: Int, headers: [(String, String)], declared: Int, sent: @Sendable (Int) -> Void)
        /// Reads the request and never answers.
        case hang
        case delayed(Duration, Reply)
    }

    public let port: Int
    private let listener: Int32
    private let handler: @Sendable (Request) -> Reply
    private let lock = NSLock()
    private var stopping = false
    private var connections: Set<Int32> = []
    private var log: [Request] = []
    private var inFlight = 0
    private var maxInFlight = 0
    private var accepted = 0
    private let threads = DispatchGroup()

    public init(_ handler: @escaping @Sendable (Request) -> Reply) throws {
        self.handler = handler
        guard let (listener, port) = listenOnLoopback(backlog: 256) else { throw POSIXError(.EADDRINUSE) }
        self.listener = listener
        self.port = port
        threads.enter()
        Thread { [self] in acceptLoop() }.start()
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    public var requests: [Request] { lock.withLock { log } }
    public var maxConcurrentRequests: Int { lock.withLock { maxInFlight } }
    public var connectionsAccepted: Int { lock.withLock { accepted } }

    /// Closes every socket and joins every thread. Idempotent: a second call (a test's own, then
    /// an owner's deinit) must not close the listener's number again — by then it may be another
    /// test's socket in this process.
    public func stop() {
        let first: Bool = lock.withLock {
            defer { stopping = true }
            // Shut down under the lock: a connection's thread removes its descriptor under it
            // before closing it, so none of these numbers has been closed and reused meanwhile.
            if !stopping {
                shutdown(listener, Int32(SHUT_RDWR))
                for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
            }
            return !stopping
        }
        guard first else { return }
        _ = threads.wait(timeout: .now() + 30)
        Glibc.close(listener)
    }

    private var isStopping: Bool { lock.withLock { stopping } }

    private func acceptLoop() {
        defer { threads.leave() }
        while !isStopping {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let admitted = lock.withLock {
                if stopping { return false }
                connections.insert(fd)
                accepted += 1
                threads.enter()
                return true
            }
            guard admitted else {
                Glibc.close(fd)
                return
            }
            Thread { [self] in
                serve(fd)
                lock.withLock { _ = connections.remove(fd) }
                Glibc.close(fd)
                threads.leave()
            }.start()
        }
    }

    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        while !isStopping {
            guard var request = readRequest(fd, &buffer) else { return }
            lock.withLock {
                inFlight += 1
                maxInFlight = max(maxInFlight, inFlight)
                request.concurrent = inFlight
                log.append(request)
            }
            // A request stops counting as in flight once its answer starts (before the client
            // can read it and send the next one on this connection).
            var counted = true
            let answering = { [self] in
                if counted { lock.withLock { inFlight -= 1 } }
                counted = false
            }
            let keepOpen = perform(handler(request), for: request, on: fd, answering: answering)
            answering()
            if !keepOpen { return }
        }
    }

    /// Returns false when the connection must close afterwards.
    private func perform(_ reply: Reply, for request: Request, on fd: Int32, answering: () -> Void) -> Bool {
        switch reply {
        case .delayed, .hang: break
        default: answering()
        }
        switch reply {
        case let .respond(status, headers, body):
            var head = "HTTP/1.1 \(status) Status\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            if status != 304 { head += "Content-Length: \(body.count)\r\n" }
            head += "\r\n"
            return send(fd, Array(head.utf8) + (request.method == "HEAD" || status == 304 ? [] : body))
        case let .raw(bytes):
            _ = send(fd, bytes)
            return false
        case let .endless(status, headers, declared, sent):
            var head = "HTTP/1.1 \(status) Status\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            head += "Content-Length: \(declared)\r\n\r\n"
            guard send(fd, Array(head.utf8)) else { return false }
            let chunk = [UInt8](repeating: 0, count: 64 << 10)
            var total = 0
            while total < declared, !isStopping, send(fd, Array(chunk.prefix(declared - total))) {
                total += min(chunk.count, declared - total)
            }
            sent(total)
            return false
        case .reset:
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            return false
        case let .truncate(declared, body):
            let head = "HTTP/1.1 200 OK\r\nContent-Length: \(declared)\r\n\r\n"
            _ = send(fd, Array(head.utf8) + body)
            return false
        case let .drip(body, chunk, interval):
            var bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
            while !bytes.isEmpty, !isStopping {
                guard send(fd, Array(bytes.prefix(max(1, chunk)))) else { return false }
                bytes.removeFirst(min(max(1, chunk), bytes.count))
                Thread.sleep(forTimeInterval: interval.seconds)
            }
            return true
        case .hang:
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while !isStopping {
                // Wakes only to notice stop() or the client hanging up.
                if poll(&pollfd, 1, 100) > 0 {
                    var byte: UInt8 = 0
                    if recv(fd, &byte, 1, Int32(MSG_PEEK)) <= 0 { return false }
                }
            }
            return false
        case let .delayed(delay, inner):
            Thread.sleep(forTimeInterval: delay.seconds)
            return perform(inner, for: request, on: fd, answering: answering)
        }
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0, errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// `length` bytes of body: what `buffer` holds already, then from the socket.
    private func readBody(_ fd: Int32, _ buffer: inout [UInt8], length: Int) -> [UInt8]? {
        while buffer.count < length {
            var chunk = [UInt8](repeating: 0, count: 16 << 10)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
        let body = Array(buffer[..<length])
        buffer.removeSubrange(..<length)
        return body
    }

    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> Request? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        while true {
            if let end = buffer.firstRange(of: terminator) {
                let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                var lines = head.components(separatedBy: "\r\n")
                let parts = lines.removeFirst().split(separator: " ")
                guard parts.count == 3 else { return nil }
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                        .trimmingCharacters(in: .whitespaces)
                }
                var request = Request(method: String(parts[0]), target: String(parts[1]), headers: headers, receivedAt: .now)
                if let length = headers["content-length"].flatMap(Int.init), length > 0 {
                    guard length <= 16 << 20, let body = readBody(fd, &buffer, length: length) else { return nil }
                    request.body = body
                }
                return request
            }
            guard buffer.count < 64 << 10 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 16 << 10)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }
}

extension Duration {
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
