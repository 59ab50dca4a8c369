import Foundation
import Glibc
import PackdTestSupport
import Testing
@testable import Server

/// File bodies through sendfile(2) (`SendfileTransfer`), beside the read path it replaced: the
/// same bytes for whole files, ranges and `If-Range`; slow readers, a client that stops reading,
/// many downloads at once. Files span more than one residency window (`SendfileTransfer.window`)
/// and turn budget, with an odd tail; the byte pattern catches reordered or repeated blocks.
@Suite struct SendfileTests {
    static let etag = "\"v1-abc\""

    /// A directory with one file of `size` patterned bytes; removed by `remove()`.
    final class Folder: @unchecked Sendable {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("packd-sendfile-\(UUID().uuidString)")
        let content: [UInt8]
        var file: String { url.appendingPathComponent("artifact.db").path }

        init(size: Int) throws {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            content = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                for index in 0..<size { buffer[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 12) }
                count = size
            }
            try Data(content).write(to: URL(fileURLWithPath: file))
        }

        func remove() { try? FileManager.default.removeItem(at: url) }
    }

    /// A server answering `/file` the way artifacts are answered: `ImmutableFileAnswer` decides
    /// between 200, 206, 304 and 416, then `respondWithFile`.
    static func server(_ folder: Folder, limits: ServerLimits = ServerLimits(), outcomes: Shared<[Bool]>? = nil) throws -> TestServer {
        try TestServer(limits: limits) { router, _ in
            router.get("/file") { request, responder in
                let size = folder.content.count
                var headers: HTTPHeaders = ["ETag": etag, "Accept-Ranges": "bytes"]
                let done: (Bool) -> Void = { sent in outcomes?.update { $0.append(sent) } }
                switch ImmutableFileAnswer.decide(method: request.method, headers: request.headers, etag: etag, size: size) {
                case .notModified:
                    responder.respond(HTTPResponse(status: .notModified, headers: headers))
                case .unsatisfiable:
                    headers.set("Content-Range", ImmutableFileAnswer.unsatisfiedRange(size: size))
                    responder.respond(HTTPResponse(status: .rangeNotSatisfiable, headers: headers))
                case .whole:
                    responder.respondWithFile(path: folder.file, headers: headers, completion: done)
                case .partial(let bytes):
                    headers.set("Content-Range", ImmutableFileAnswer.contentRange(bytes, size: size))
                    responder.respondWithFile(path: folder.file, status: .partialContent, headers: headers, range: bytes, completion: done)
                }
            }
        }
    }

    @Test(arguments: [true, false])
    func rangesAndIfRangeAreTheFilesBytes(sendfile: Bool) throws {
        let folder = try Folder(size: 9 << 20 | 13)
        defer { folder.remove() }
        var limits = ServerLimits()
        limits.sendfile = sendfile
        let server = try Self.server(folder, limits: limits)
        defer { server.stop() }
        let client = try server.client()
        let size = folder.content.count
        let whole = try client.request("GET /file HTTP/1.1\r\n\r\n")
        #expect(whole.status == 200 && whole.header("Content-Length") == String(size))
        #expect(whole.body == folder.content)
        // (Range header, If-Range, expected status, expected bytes), one after another on one
        // connection, so each body also ends exactly where it should.
        let cases: [(String, String?, Int, Range<Int>)] = [
            ("bytes=0-0", nil, 206, 0..<1),
            ("bytes=100-", nil, 206, 100..<size),
            ("bytes=-17", nil, 206, (size - 17)..<size),
            ("bytes=8388000-8389999", nil, 206, 8_388_000..<8_390_000),
            ("bytes=5-9", Self.etag, 206, 5..<10),
            ("bytes=5-9", "\"v0-old\"", 200, 0..<size),
            ("bytes=0-1,5-6", nil, 200, 0..<size),
            ("bytes=\(size)-", nil, 416, 0..<0),
        ]
        for (range, ifRange, status, bytes) in cases {
            let condition = ifRange.map { "If-Range: \($0)\r\n" } ?? ""
            let response = try client.request("GET /file HTTP/1.1\r\nRange: \(range)\r\n\(condition)\r\n")
            #expect(response.status == status, "\(range) \(ifRange ?? "")")
            if status == 206 {
                #expect(response.header("Content-Range") == ImmutableFileAnswer.contentRange(bytes, size: size))
            }
            if status != 416 {
                #expect(response.body == Array(folder.content[bytes]), "\(range): \(response.body.count) bytes")
            }
        }
        let head = try client.request("HEAD /file HTTP/1.1\r\n\r\n", bodyless: true)
        #expect(head.status == 200 && head.header("Content-Length") == String(size) && head.body.isEmpty)
        // Seven bodies of the eight, and the whole one: each took the path asked for.
        let counted = server.onLoop { server.server.fileBodies }
        #expect(sendfile ? (counted.sendfile, counted.reads) == (8, 0) : (counted.sendfile, counted.reads) == (0, 8), "\(counted)")
    }

    /// A reader slower than the disk gets every byte, and the server holds none of them: the
    /// body waits in the page cache, not in a buffer.
    @Test func aSlowReaderGetsEveryByteAndNothingIsQueuedForIt() throws {
        let folder = try Folder(size: 3 << 20 | 7)
        defer { folder.remove() }
        let server = try Self.server(folder)
        defer { server.stop() }
        let client = try SmallWindowClient(port: server.port)
        try client.send("GET /file HTTP/1.1\r\nRange: bytes=1-\r\n\r\n")
        var received: [UInt8] = []
        var mostQueued = 0
        let expected = 3 << 20 | 7 - 1
        while received.count < expected + 200 {
            guard let chunk = try client.receive(max: 8192) else { break }
            received += chunk
            if let end = TestResponse.headEnd(received), received.count - end >= expected { break }
            mostQueued = max(mostQueued, server.onLoop { server.server.queuedBytes })
            usleep(200)
        }
        let end = try #require(TestResponse.headEnd(received))
        #expect(String(decoding: received[..<end], as: UTF8.self).hasPrefix("HTTP/1.1 206"))
        #expect(Array(received[end...]) == Array(folder.content[1...]))
        #expect(mostQueued == 0)
        #expect(server.onLoop { server.server.fileBodies.sendfile } == 1)
    }

    /// A client that stops reading costs one descriptor of the file and no buffer, until the
    /// write deadline closes its connection; then the file is closed too.
    @Test func aClientThatStopsReadingHoldsOneDescriptorUntilTheWriteTimeout() throws {
        let folder = try Folder(size: 8 << 20)
        defer { folder.remove() }
        var limits = ServerLimits()
        limits.writeTimeout = .milliseconds(600)
        let outcomes = Shared<[Bool]>([])
        let server = try Self.server(folder, limits: limits, outcomes: outcomes)
        defer { server.stop() }
        let client = try SmallWindowClient(port: server.port)
        try client.send("GET /file HTTP/1.1\r\n\r\n")
        // Stalled: the socket buffers are full, the transfer waits for the socket.
        #expect(eventually { Self.descriptors(on: folder.file) == 1 && server.onLoop { server.server.connectionCount } == 1 })
        #expect(server.onLoop { server.server.queuedBytes } == 0)
        #expect(eventually { outcomes.current == [false] })
        #expect(eventually { server.onLoop { server.server.connectionCount } == 0 })
        #expect(eventually { Self.descriptors(on: folder.file) == 0 })
    }

    /// A file that is not in the page cache is read in on the thread pool a window at a time
    /// before sendfile sends it, so the loop never waits for the disk; the bytes are the same.
    @Test func aColdFileIsReadInOffTheLoopThenSent() throws {
        let folder = try Folder(size: 2 * SendfileTransfer.window + 12_345)
        defer { folder.remove() }
        let descriptor = open(folder.file, O_RDONLY)
        defer { close(descriptor) }
        fsync(descriptor)
        posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED)
        let whole = 0..<folder.content.count
        try #require(!PageCacheResidency.isResident(file: descriptor, whole),
                     "the file system keeps this file's pages (tmpfs?): a cold read cannot be shown here")
        let server = try Self.server(folder)
        defer { server.stop() }
        let response = try server.client().request("GET /file HTTP/1.1\r\n\r\n")
        #expect(response.status == 200 && response.body == folder.content)
        let counted = server.onLoop { server.server.fileBodies }
        #expect(counted.sendfile == 1 && counted.windowsReadIn >= 1, "\(counted)")
        #expect(PageCacheResidency.isResident(file: descriptor, whole))
    }

    /// Many downloads at once, of the whole file and of ranges, on their own connections: each
    /// gets exactly its bytes.
    @Test func manyConcurrentDownloadsEachGetTheirBytes() throws {
        let folder = try Folder(size: 2 << 20 | 5)
        defer { folder.remove() }
        let outcomes = Shared<[Bool]>([])
        let server = try Self.server(folder, outcomes: outcomes)
        defer { server.stop() }
        let size = folder.content.count
        let clients = 48
        let failures = Shared<[String]>([])
        let port = server.port
        DispatchQueue.concurrentPerform(iterations: clients) { index in
            let range = index % 3 == 0 ? nil : (index * 40_961 % size)..<min(size, index * 40_961 % size + 700_000 + index)
            do {
                let client = try RawClient(port: port, timeout: 120)
                let header = range.map { "Range: bytes=\($0.lowerBound)-\($0.upperBound - 1)\r\n" } ?? ""
                let response = try client.request("GET /file HTTP/1.1\r\n\(header)\r\n")
                let expected = range.map { Array(folder.content[$0]) } ?? folder.content
                if response.body != expected || response.status != (range == nil ? 200 : 206) {
                    failures.update { $0.append("client \(index): \(response.status), \(response.body.count) bytes") }
                }
            } catch {
                failures.update { $0.append("client \(index): \(error)") }
            }
        }
        #expect(failures.current.isEmpty, "\(failures.current)")
        #expect(eventually { outcomes.current.count == clients })
        #expect(outcomes.current.allSatisfy { $0 })
        #expect(server.onLoop { server.server.fileBodies.sendfile } == clients)
        #expect(eventually { Self.descriptors(on: folder.file) == 0 })
    }

    /// Descriptors of this process open on `path` (from /proc/self/fd).
    static func descriptors(on path: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path }.count
    }
}

/// A client whose receive buffer is set small before it connects, so the server's socket fills
/// after a few hundred kilobytes instead of several megabytes.
final class SmallWindowClient {
    let fd: Int32

    init(port: Int, receiveBuffer: Int32 = 16 * 1024) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var size = receiveBuffer
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var time = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        guard connectToLoopback(fd, port: port) == 0 else {
            Glibc.close(fd)
            throw RawClient.Failure(description: "connect: \(String(cString: strerror(errno)))")
        }
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
            throw RawClient.Failure(description: "send: \(String(cString: strerror(errno)))")
        }
    }

    /// Up to `max` bytes; nil at the end of the stream.
    func receive(max: Int) throws -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: max)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, max, 0) }
        if count < 0 { throw RawClient.Failure(description: "recv: \(String(cString: strerror(errno)))") }
        return count == 0 ? nil : Array(chunk[..<count])
    }
}

extension TestResponse {
    /// Where the body starts in `bytes` (after the head's blank line), if the head is complete.
    static func headEnd(_ bytes: [UInt8]) -> Int? {
        find([13, 10, 13, 10], in: bytes, from: 0).map { $0 + 4 }
    }
}
