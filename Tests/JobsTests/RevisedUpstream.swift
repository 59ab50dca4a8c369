import Foundation
import PackdTestSupport

/// An in-process map server whose content a test can revise: a style with one vector source,
/// its TileJSON, sprites, glyphs and tiles, every 200 with an `ETag` (a hash of the body) and a
/// `Last-Modified`, answering `If-None-Match` with 304 as a CDN does. Tiles can be changed
/// (another body) or removed (404); the style can be revised; any path can be made to fail.
final class RevisedUpstream: @unchecked Sendable {
    private let lock = NSLock()
    /// How often each path was changed: every change gives it another body.
    private var changedTiles: [String: Int] = [:]
    private var removedTiles: Set<String> = []
    private var styleRevision = 0
    private var failingPaths: [String: Int] = [:]
    private var tileDelay: Duration?
    private var honoursValidators = true
    private var upstream: TestUpstream!

    init() throws {
        upstream = try TestUpstream { [unowned self] request in self.reply(to: request) }
    }

    var base: String { upstream.url("") }
    var requests: [TestUpstream.Request] { upstream.requests }
    func stop() { upstream.stop() }

    /// Tile (or any) paths get another body from now on, a new one on every change.
    func change(tiles: some Sequence<String>) { lock.withLock { for path in tiles { changedTiles[path, default: 0] += 1 } } }
    /// Tile paths answer 404 from now on.
    func remove(tiles: some Sequence<String>) { lock.withLock { removedTiles.formUnion(tiles) } }
    func reviseStyle() { lock.withLock { styleRevision += 1 } }
    /// Answers every request with the full body from now on, as upstreams without 304 support do.
    func ignoreValidators() { lock.withLock { honoursValidators = false } }
    /// `path` answers `status` from now on.
    func fail(_ path: String, status: Int) { lock.withLock { failingPaths[path] = status } }
    /// Each tile answer waits this long: longer than a test allows a suspend to take, so only
    /// cancelled transfers end in time.
    func delayTiles(_ delay: Duration?) { lock.withLock { tileDelay = delay } }

    var region: [String: Any] {
        ["style_url": base + "/style.json", "bounds": [-20.0, -20.0, 20.0, 20.0], "min_zoom": 0, "max_zoom": 5]
    }

    /// What the upstream serves at `path` now (decoded), nil for a 404.
    func body(for path: String) -> [UInt8]? {
        lock.withLock {
            switch path {
            case "/style.json":
                return Array("""
                    {"version": 8, "metadata": {"revision": \(styleRevision)},
                     "sources": {"v": {"type": "vector", "url": "\(base)/tiles.json"}},
                     "sprite": "\(base)/sprite", "glyphs": "\(base)/fonts/{fontstack}/{range}.pbf",
                     "layers": [{"id": "l", "type": "symbol", "source": "v", "source-layer": "x",
                                 "layout": {"text-field": "a", "text-font": ["Noto Sans Regular"]}}]}
                    """.utf8)
            case "/tiles.json":
                return Array(#"{"tilejson": "3.0.0", "tiles": [""# .utf8) + Array(base.utf8)
                    + Array(#"/tiles/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 14}"#.utf8)
            default:
                if removedTiles.contains(path) { return nil }
                let seed = Int(Self.hash(path) % 1_000_000) + 7 * changedTiles[path, default: 0]
                return testBody(seed: seed, size: 64 + Int(Self.hash(path) % 700))
            }
        }
    }

    static func etag(of body: [UInt8]) -> String {
        "\"\(String(Self.hash(String(decoding: body, as: UTF8.self)), radix: 16))\""
    }

    private func reply(to request: TestUpstream.Request) -> TestUpstream.Reply {
        let path = request.target
        let (failure, delay, honoured) = lock.withLock { (failingPaths[path], tileDelay, honoursValidators) }
        if let failure { return .respond(status: failure) }
        var reply: TestUpstream.Reply
        if let body = body(for: path) {
            let tag = Self.etag(of: body)
            if honoured, request.headers["if-none-match"]?.trimmingCharacters(in: .whitespaces) == tag {
                reply = .respond(status: 304, headers: [("ETag", tag), ("Cache-Control", "max-age=7200")])
            } else {
                reply = .respond(status: 200, headers: [("ETag", tag), ("Last-Modified", "Sun, 22 Nov 2026 10:00:00 GMT"),
                                                        ("Cache-Control", "max-age=3600")], body: body)
            }
        } else {
            reply = .respond(status: 404)
        }
        if path.hasPrefix("/tiles/"), let delay { reply = .delayed(delay, reply) }
        return reply
    }

    /// FNV-1a: stable across runs (unlike `hashValue`).
    static func hash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}
