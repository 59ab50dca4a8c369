import Foundation
import Glibc

public struct ClientFailure: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}

/// A blocking socket client that sends one request and reads the answer's head, then decodes a
/// chunked body incrementally: enough to follow an endless `text/event-stream` or read one
/// complete response.
public final class StreamClient {
    public struct Event: Equatable, Sendable {
        public var id: Int64?
        public var type: String?
        public var data: String

        public init(id: Int64?, type: String?, data: String) {
            self.id = id
            self.type = type
            self.data = data
        }
    }

    public let fd: Int32
    private var raw: [UInt8] = []
    public private(set) var status = 0
    public private(set) var headers: [(String, String)] = []
    /// Decoded body bytes not yet consumed.
    private var body: [UInt8] = []
    private var chunkRemaining = 0
    private var bodyEnded = false
    public private(set) var comments = 0
    /// Bytes read from the socket so far.
    public private(set) var bytesReceived = 0
    /// The event blocks read so far, as they came (bounded), for `recordStream`.
    private var transcript: [UInt8] = []

    public init(port: Int, timeout: Double = 30, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientFailure(description: "socket failed") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var time = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        let status = connectToLoopback(fd, port: port)
        // No close here: the object is whole, so throwing runs `deinit`, which closes `fd`. A close
        // here as well closed the number twice — by then perhaps another test's socket.
        guard status == 0 else { throw ClientFailure(description: "connect failed") }
    }

    deinit { Glibc.close(fd) }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public func send(_ text: String) throws {
        try sendBytes(Array(text.utf8))
    }

    public func sendBytes(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw ClientFailure(description: "send failed") }
            offset += sent
        }
    }

    /// Sends a GET and reads the response head.
    public func get(_ target: String, headers extra: [String: String] = [:]) throws {
        var request = "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in extra { request += "\(name): \(value)\r\n" }
        try send(request + "\r\n")
        try readHead()
    }

    public func readHead() throws {
        while true {
            if let end = find([13, 10, 13, 10], in: raw) {
                let lines = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
                status = Int(lines[0].split(separator: " ")[1]) ?? 0
                headers = lines.dropFirst().compactMap { line in
                    guard let colon = line.firstIndex(of: ":") else { return nil }
                    return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }
                raw.removeFirst(end + 4)
                if let length = header("content-length").flatMap(Int.init) {
                    while raw.count < length { guard try receive() else { break } }
                    body = Array(raw.prefix(length))
                    bodyEnded = true
                }
                return
            }
            guard try receive() else { throw ClientFailure(description: "closed before head") }
        }
    }

    /// Everything after the head read last, up to the end of the connection: the rest of the
    /// body and any pipelined responses after it, undecoded.
    public func readRemainder() throws -> String {
        while try receive() {}
        return String(decoding: raw, as: UTF8.self)
    }

    /// The whole body of a Content-Length or chunked response.
    public func readBody() throws -> String {
        String(decoding: try readBodyBytes(), as: UTF8.self)
    }

    /// The whole body as bytes (tiles, images, gzip).
    public func readBodyBytes() throws -> [UInt8] {
        while !bodyEnded {
            guard try fill() else { break }
        }
        defer { body = [] }
        return body
    }

    /// The next event of the stream, or `nil` when the stream ended. Comments are counted, and
    /// returned as an event of type `:` when `returningComments`.
    public func nextEvent(returningComments: Bool = false) throws -> Event? {
        while true {
            if let end = find([10, 10], in: body) {
                let block = String(decoding: body[..<end], as: UTF8.self)
                if transcript.count < 1 << 20 { transcript += body[..<(end + 2)] }
                body.removeFirst(end + 2)
                var event = Event(id: nil, type: nil, data: "")
                var isComment = true
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix(":") { continue }
                    isComment = false
                    if line.hasPrefix("id: ") { event.id = Int64(line.dropFirst(4)) }
                    if line.hasPrefix("event: ") { event.type = String(line.dropFirst(7)) }
                    if line.hasPrefix("data: ") { event.data = String(line.dropFirst(6)) }
                }
                if isComment {
                    comments += 1
                    if returningComments { return Event(id: nil, type: ":", data: block) }
                    continue
                }
                return event
            }
            guard try fill() else { return nil }
        }
    }

    /// Records the head and the events read so far for the openapi check (`ResponseRecorder`).
    public func recordStream(method: String = "GET", target: String) {
        ResponseRecorder.record(method: method, target: target, status: status, headers: headers,
                                body: String(decoding: transcript, as: UTF8.self))
    }

    /// Reads events until `stop` says so; returns them all.
    public func events(until stop: (Event) -> Bool) throws -> [Event] {
        var events: [Event] = []
        while let event = try nextEvent() {
            events.append(event)
            if stop(event) { return events }
        }
        throw ClientFailure(description: "stream ended after \(events.count) events")
    }

    /// Moves decoded body bytes from `raw` to `body`; false at end of stream.
    private func fill() throws -> Bool {
        if bodyEnded { return false }
        while true {
            if chunkRemaining > 0, !raw.isEmpty {
                let take = min(chunkRemaining, raw.count)
                body.append(contentsOf: raw[..<take])
                raw.removeFirst(take)
                chunkRemaining -= take
                if chunkRemaining == 0 { chunkRemaining = -2 }
                return true
            }
            if chunkRemaining < 0, raw.count >= 2 {
                raw.removeFirst(2)
                chunkRemaining = 0
                continue
            }
            if chunkRemaining == 0, let lineEnd = find([13, 10], in: raw) {
                guard let size = Int(String(decoding: raw[..<lineEnd], as: UTF8.self), radix: 16) else {
                    throw ClientFailure(description: "bad chunk size")
                }
                raw.removeFirst(lineEnd + 2)
                if size == 0 {
                    bodyEnded = true
                    return false
                }
                chunkRemaining = size
                continue
            }
            guard try receive() else { return false }
        }
    }

    private func receive() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            bytesReceived += count
            raw.append(contentsOf: chunk[..<count])
            return true
        }
        if count == 0 || errno == ECONNRESET { return false }
        throw ClientFailure(description: "recv: \(String(cString: strerror(errno)))")
    }

    private func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        for index in 0...(bytes.count - needle.count) where bytes[index] == needle[0] {
            if bytes[index..<index + needle.count].elementsEqual(needle) { return index }
        }
        return nil
    }
}
