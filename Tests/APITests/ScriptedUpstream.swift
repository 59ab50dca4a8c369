import API
import Foundation
import Loop
import Packs
import Store

/// An `UpstreamClient` answering from a table, always on a later loop turn as the real one does,
/// and recording what it was asked: the API's upstream-facing routes tested without a network.
final class ScriptedUpstream: UpstreamClient, @unchecked Sendable {
    private let loop: EventLoop
    private let lock = NSLock()
    private var answers: [String: Result<UpstreamResponse, UpstreamFailure>] = [:]
    /// Files served by range (PMTiles archives), with their ETag.
    private var files: [String: (bytes: [UInt8], etag: String)] = [:]
    private var asked: [String] = []

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// A 200 with `body`, or any answer; a URL without one gets 404.
    func serve(_ url: String, _ body: String, cache: HTTPCacheHeaders = HTTPCacheHeaders()) {
        answer(url, .success(UpstreamResponse(status: 200, body: Array(body.utf8), cache: cache)))
    }

    func answer(_ url: String, _ result: Result<UpstreamResponse, UpstreamFailure>) {
        lock.withLock { answers[url] = result }
    }

    /// Serves `bytes` to range requests for `url` (206 with `Content-Range` and `etag`).
    func serveFile(_ url: String, _ bytes: [UInt8], etag: String = "\"a1\"") {
        lock.withLock { files[url] = (bytes, etag) }
    }

    var requests: [String] { lock.withLock { asked } }

    func getRange(_ url: String, range: ClosedRange<UInt64>, ifMatch: String?, ifUnmodifiedSince: Int64?, limits: UpstreamLimits,
                  completion: @escaping (Result<UpstreamResponse, UpstreamFailure>) -> Void) {
        let result: Result<UpstreamResponse, UpstreamFailure> = lock.withLock {
            asked.append("\(url) bytes=\(range.lowerBound)-\(range.upperBound)")
            if let answer = answers[url] { return answer }
            guard let file = files[url] else { return .success(UpstreamResponse(status: 404, body: [])) }
            if let ifMatch, ifMatch != file.etag { return .success(UpstreamResponse(status: 412, body: [])) }
            let last = min(range.upperBound, UInt64(file.bytes.count) - 1)
            return .success(UpstreamResponse(status: 206, body: Array(file.bytes[Int(range.lowerBound)...Int(last)]), headers: [
                "content-range": "bytes \(range.lowerBound)-\(last)/\(file.bytes.count)", "etag": file.etag,
            ]))
        }
        let callback = LoopBound(completion, loop: loop)
        loop.execute { callback.value(result) }
    }

    func get(_ url: String, limits: UpstreamLimits, completion: @escaping (Result<UpstreamResponse, UpstreamFailure>) -> Void) {
        let result = lock.withLock {
            asked.append(url)
            return answers[url] ?? .success(UpstreamResponse(status: 404, body: []))
        }
        let callback = LoopBound(completion, loop: loop)
        loop.execute { callback.value(result) }
    }
}

extension RoutesFixture {
    /// Runs `body` against a fresh fixture, then stops it and removes its files.
    static func using(_ body: (RoutesFixture) throws -> Void) throws {
        let server = try RoutesFixture()
        defer {
            server.stop()
            server.removeFiles()
        }
        try body(server)
    }

    /// Plugs a scripted upstream into the API (as `packd` plugs its fetcher-backed one).
    func scriptedUpstream() -> ScriptedUpstream {
        let upstream = ScriptedUpstream(loop: server.thread.loop)
        nonisolated(unsafe) let api = api!
        server.onLoop { api.upstream = upstream }
        return upstream
    }
}
