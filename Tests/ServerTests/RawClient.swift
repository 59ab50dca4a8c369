import Foundation
import Glibc
import PackdTestSupport

/// A blocking POSIX-socket HTTP client, so tests see exactly the bytes on the wire.
/// Every read has a deadline; nothing waits forever.
final class RawClient: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let fd: Int32
    private(set) var buffer: [UInt8] = []
    /// Bytes sent so far. A test may send from one thread and read this from another, so the
    /// count is kept under a lock.
    var sentBytes: Int {
        sentLock.lock()
        defer { sentLock.unlock() }
        return sent
    }
    private var sent = 0
    private let sentLock = NSLock()

    init(port: Int, timeout: Double = 30) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        setTimeout(timeout)
        let status = connectToLoopback(fd, port: port)
        // No close here: the object is whole, so throwing runs `deinit`, which closes `fd` (twice
        // closed, the number may by then be another test's socket).
        guard status == 0 else { throw Failure(description: "connect: \(String(cString: strerror(errno)))") }
    }

    deinit { Glibc.close(fd) }

    func setTimeout(_ seconds: Double) {
        var time = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "send: \(String(cString: strerror(errno)))")
            }
            offset += written
            sentLock.lock()
            sent += written
            sentLock.unlock()
        }
    }

    /// Reads once into the buffer. Returns false on end of stream or reset.
    @discardableResult
    func receiveMore() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                return true
            }
            if count == 0 { return false }
            if errno == EINTR { continue }
            if errno == ECONNRESET { return false }
            throw Failure(description: "recv: \(String(cString: strerror(errno)))")
        }
    }

    /// Reads until the peer closes (or the read deadline passes, which throws).
    func readUntilClosed() throws -> [UInt8] {
        while try receiveMore() {}
        defer { buffer = [] }
        return buffer
    }

    /// True if the server closes the connection (EOF or reset), reading and keeping any bytes first.
    func waitForClose() throws -> Bool {
        while try receiveMore() {}
        return true
    }

    /// Reads one complete response off the connection.
    func readResponse(bodyless: Bool = false) throws -> TestResponse {
        while true {
            if let (response, used) = try TestResponse.parse(buffer, bodyless: bodyless) {
                buffer.removeFirst(used)
                return response
            }
            guard try receiveMore() else {
                if let (response, used) = try TestResponse.parse(buffer, bodyless: bodyless, atEOF: true) {
                    buffer.removeFirst(used)
                    return response
                }
                throw Failure(description: "connection closed with \(buffer.count) unparsed bytes: \(String(decoding: buffer.prefix(200), as: UTF8.self))")
            }
        }
    }

    func request(_ text: String, bodyless: Bool = false) throws -> TestResponse {
        try send(text)
        return try readResponse(bodyless: bodyless)
    }
}

/// One response as read off the wire by `RawClient`.
struct TestResponse {
    let status: Int
    let headers: [(String, String)]
    let body: [UInt8]
    let chunked: Bool

    var text: String { String(decoding: body, as: UTF8.self) }

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// Parses a response at the start of `bytes`; nil if more bytes are needed.
    static func parse(_ bytes: [UInt8], bodyless: Bool, atEOF: Bool = false) throws -> (TestResponse, Int)? {
        guard let headEnd = find([13, 10, 13, 10], in: bytes, from: 0) else { return nil }
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw RawClient.Failure(description: "bad status line: \(head.prefix(80))")
        }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let start = headEnd + 4
        let header = { (name: String) in headers.first { $0.0.lowercased() == name }?.1 }
        if bodyless || status < 200 || status == 204 || status == 304 {
            return (TestResponse(status: status, headers: headers, body: [], chunked: false), start)
        }
        if let length = header("content-length").flatMap(Int.init) {
            guard bytes.count >= start + length else { return nil }
            return (TestResponse(status: status, headers: headers, body: Array(bytes[start..<start + length]), chunked: false), start + length)
        }
        if header("transfer-encoding")?.lowercased() == "chunked" {
            var body: [UInt8] = []
            var offset = start
            while true {
                guard let lineEnd = find([13, 10], in: bytes, from: offset) else { return nil }
                guard let size = Int(String(decoding: bytes[offset..<lineEnd], as: UTF8.self), radix: 16) else {
                    throw RawClient.Failure(description: "bad chunk size")
                }
                let dataStart = lineEnd + 2
                guard bytes.count >= dataStart + size + 2 else { return nil }
                if size == 0 {
                    return (TestResponse(status: status, headers: headers, body: body, chunked: true), dataStart + 2)
                }
                body.append(contentsOf: bytes[dataStart..<dataStart + size])
                offset = dataStart + size + 2
            }
        }
        guard atEOF else { return nil }
        return (TestResponse(status: status, headers: headers, body: Array(bytes[start...]), chunked: false), bytes.count)
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8], from: Int) -> Int? {
        guard bytes.count >= needle.count, from <= bytes.count - needle.count else { return nil }
        for index in from...(bytes.count - needle.count) where bytes[index] == needle[0] {
            if Array(bytes[index..<index + needle.count]) == needle { return index }
        }
        return nil
    }
}
