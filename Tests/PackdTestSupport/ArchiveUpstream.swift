import Foundation
import Packs
import TimeFormats

/// A file server on 127.0.0.1 for PMTiles archives, as object storage and CDNs serve them:
/// `Range: bytes=a-b` answered 206 with `Content-Range`, a strong `ETag` and `Last-Modified`,
/// `If-Match` and `If-Unmodified-Since` answered 412 when the archive is another one by now, an
/// unsatisfiable range answered 416 — and, on demand, the faults a client must survive: the
/// archive replaced, Range ignored (200 with the whole, very large, file), a truncated 206, a
/// 206 of other bytes, 416, and whatever a test scripts for single requests. It records every
/// range asked for and the precondition sent with it.
public final class ArchiveUpstream: @unchecked Sendable {
    public enum Fault: Sendable {
        case none
        /// 200 with a `declared`-byte body, streamed until the client hangs up.
        case ignoreRange(declared: Int)
        /// Every range answered 206 with half its bytes, then the connection closed.
        case truncate
        /// Every n-th request so answered, the others as asked.
        case truncateEvery(Int)
        /// Every range answered 416 as if the archive were shorter.
        case unsatisfiable
        /// Every range answered with bytes starting one later than asked.
        case wrongRange
    }

    public struct RangeAsked: Sendable {
        public let range: ClosedRange<UInt64>?
        public let ifMatch: String?
        public let ifUnmodifiedSince: String?
        public let ifNoneMatch: String?
        public let acceptEncoding: String?
    }

    public let path: String
    private let lock = NSLock()
    private var archive: [UInt8]
    private var etag: String?
    private var lastModified: Int64?
    private var fault = Fault.none
    private var delay: Duration?
    private var asked: [RangeAsked] = []
    private var bodyBytes = 0
    private var ignoredBytesSent = 0
    /// Runs before each answer with the number of ranges asked so far (this one included); may
    /// replace the archive or set a fault, or return a reply of its own.
    private var script: (@Sendable (Int, TestUpstream.Request) -> TestUpstream.Reply?)?
    private var upstream: TestUpstream!

    /// `etag` nil serves no ETag (only `Last-Modified`); `lastModified` nil serves none.
    public init(archive: [UInt8], path: String = "/maps/world.pmtiles", etag: String? = "\"v1\"",
                lastModified: Int64? = 1_700_000_000) throws {
        self.archive = archive
        self.path = path
        self.etag = etag
        self.lastModified = lastModified
        upstream = try TestUpstream { [unowned self] request in self.reply(to: request) }
    }

    deinit { upstream.stop() }

    /// Stops serving and drops the script: a script that captures this upstream (to replace the
    /// archive mid-download) is a cycle until then.
    public func stop() {
        upstream.stop()
        lock.withLock { script = nil }
    }

    public var url: String { upstream.url(path) }
    public var upstreamRequests: [TestUpstream.Request] { upstream.requests }
    public var maxConcurrentRequests: Int { upstream.maxConcurrentRequests }

    /// Every request for the archive, in arrival order.
    public var rangesAsked: [RangeAsked] { lock.withLock { asked } }
    /// Body bytes answered with 206 (what a reader fetched).
    public var bytesServed: Int { lock.withLock { bodyBytes } }
    /// Body bytes sent while ignoring a range before the client hung up.
    public var bytesSentIgnoringRange: Int { lock.withLock { ignoredBytesSent } }

    /// Serves another archive from now on, with new validators.
    public func replace(with bytes: [UInt8], etag: String?, lastModified: Int64? = nil) {
        lock.withLock {
            archive = bytes
            self.etag = etag
            self.lastModified = lastModified ?? self.lastModified.map { $0 + 60 }
        }
    }

    public func setFault(_ fault: Fault) { lock.withLock { self.fault = fault } }

    /// Holds every answer about the archive this long (a far server; a download that lasts).
    public func setDelay(_ delay: Duration?) { lock.withLock { self.delay = delay } }

    public func setScript(_ script: (@Sendable (Int, TestUpstream.Request) -> TestUpstream.Reply?)?) {
        lock.withLock { self.script = script }
    }

    private func reply(to request: TestUpstream.Request) -> TestUpstream.Reply {
        let answer = archiveReply(to: request)
        guard request.target == path, let delay = lock.withLock({ self.delay }) else { return answer }
        return .delayed(delay, answer)
    }

    private func archiveReply(to request: TestUpstream.Request) -> TestUpstream.Reply {
        guard request.target == path else {
            // Other paths (a style naming the archive) are the script's, else 404.
            let other = lock.withLock { self.script }
            return other?(0, request) ?? .respond(status: 404)
        }
        let range = request.headers["range"].flatMap(Self.parseRange)
        let (count, script) = lock.withLock { () -> (Int, (@Sendable (Int, TestUpstream.Request) -> TestUpstream.Reply?)?) in
            asked.append(RangeAsked(range: range, ifMatch: request.headers["if-match"],
                                    ifUnmodifiedSince: request.headers["if-unmodified-since"],
                                    ifNoneMatch: request.headers["if-none-match"], acceptEncoding: request.headers["accept-encoding"]))
            return (asked.count, self.script)
        }
        if let scripted = script?(count, request) { return scripted }
        let (bytes, etag, modified, fault) = lock.withLock { (archive, self.etag, lastModified, self.fault) }
        var validators: [(String, String)] = [("Accept-Ranges", "bytes")]
        if let etag { validators.append(("ETag", etag)) }
        if let modified { validators.append(("Last-Modified", HTTPDate.format(modified))) }
        if let ifMatch = request.headers["if-match"], ifMatch != "*", ifMatch != etag {
            return .respond(status: 412, headers: validators)
        }
        if let since = request.headers["if-unmodified-since"].flatMap(HTTPDate.parse), let modified, modified > since {
            return .respond(status: 412, headers: validators)
        }
        if let tag = request.headers["if-none-match"], tag == etag {
            return .respond(status: 304, headers: validators)
        }
        if case .ignoreRange(let declared) = fault {
            return .endless(status: 200, headers: validators, declared: declared) { [self] sent in
                lock.withLock { ignoredBytesSent += sent }
            }
        }
        guard let range else { return .respond(status: 200, headers: validators, body: bytes) }
        let size = UInt64(bytes.count)
        if case .unsatisfiable = fault { return .respond(status: 416, headers: validators + [("Content-Range", "bytes */\(size / 2)")]) }
        guard range.lowerBound < size else {
            return .respond(status: 416, headers: validators + [("Content-Range", "bytes */\(size)")])
        }
        var first = range.lowerBound
        let last = min(range.upperBound, size - 1)
        if case .wrongRange = fault { first += 1 }
        let body = Array(bytes[Int(first)...Int(last)])
        let headers = validators + [("Content-Range", "bytes \(first)-\(last)/\(size)")]
        var truncate = false
        if case .truncate = fault { truncate = true }
        if case .truncateEvery(let n) = fault, count % max(n, 1) == 0 { truncate = true }
        if truncate {
            var head = "HTTP/1.1 206 Partial Content\r\nContent-Length: \(body.count)\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            return .raw(Array((head + "\r\n").utf8) + body.prefix(body.count / 2))
        }
        lock.withLock { bodyBytes += body.count }
        return .respond(status: 206, headers: headers, body: body)
    }

    /// `bytes=a-b` (one range; `a-` to the end); nil for anything else.
    public static func parseRange(_ value: String) -> ClosedRange<UInt64>? {
        guard value.hasPrefix("bytes=") else { return nil }
        let parts = value.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = UInt64(parts[0]) else { return nil }
        let last = parts[1].isEmpty ? UInt64.max - 1 : UInt64(parts[1])
        guard let last, first <= last else { return nil }
        return first...last
    }
}
