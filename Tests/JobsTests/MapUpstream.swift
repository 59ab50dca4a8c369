import Foundation
import PackdTestSupport

/// An in-process map server on 127.0.0.1: a style with one vector source, its TileJSON, tiles,
/// sprite and glyphs, each body derived from its path so a test can check what was stored.
/// Every third tile is sent gzip-encoded (as tile servers do), every seventeenth is a 404.
final class MapUpstream: @unchecked Sendable {
    /// Fault injection, read under the lock on each request.
    struct Faults {
        /// Status answered for the style instead of the document.
        var styleStatus: Int?
        /// Status answered for every tile instead of its body.
        var tileStatus: Int?
        /// Every n-th request (counted over the whole server) answers 500.
        var failEvery: Int?
        /// Delay before each tile answer (keeps a download mid-way long enough to suspend it).
        var tileDelay: Duration?
    }

    private let lock = NSLock()
    private var faults: Faults
    /// Tiles the upstream may still answer before it holds the rest (nil: no limit).
    private let gate = NSCondition()
    private var tileBudget: Int?
    private var stopping = false
    private var held = 0
    private var counter = 0
    private var upstream: TestUpstream!

    init(faults: Faults = Faults()) throws {
        self.faults = faults
        upstream = try TestUpstream { [unowned self] request in self.reply(to: request) }
    }

    var base: String { upstream.url("") }
    var requests: [TestUpstream.Request] { upstream.requests }
    func stop() {
        gate.withLock {
            stopping = true
            gate.broadcast()
        }
        upstream.stop()
    }

    /// From now on answers only `count` more tiles; later tile requests wait until `releaseTiles`.
    /// This is what makes "mid-download" a state a test can stand in, not a race.
    func holdTiles(after count: Int = 0) {
        gate.withLock { tileBudget = count }
    }

    /// Lets every held and later tile through.
    func releaseTiles() {
        gate.withLock {
            tileBudget = nil
            gate.broadcast()
        }
    }

    /// Tile requests waiting at the gate.
    var heldTiles: Int { gate.withLock { held } }

    private func passGate() {
        gate.lock()
        defer { gate.unlock() }
        held += 1
        while let budget = tileBudget, budget <= 0, !stopping { gate.wait(until: Date().addingTimeInterval(0.1)) }
        held -= 1
        if let budget = tileBudget { tileBudget = budget - 1 }
    }

    var style: String {
        """
        {"version": 8, "sources": {"v": {"type": "vector", "url": "\(base)/tiles.json"}},
         "sprite": "\(base)/sprite", "glyphs": "\(base)/fonts/{fontstack}/{range}.pbf",
         "layers": [{"id": "l", "type": "symbol", "source": "v", "source-layer": "x",
                     "layout": {"text-field": "a", "text-font": ["Noto Sans Regular"]}}]}
        """
    }

    var tileJSON: String {
        #"{"tilejson": "3.0.0", "tiles": [""# + base + #"/tiles/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 14}"#
    }

    /// What the upstream serves at `path` (decoded), nil for a 404.
    func body(for path: String) -> [UInt8]? {
        switch path {
        case "/style.json": return Array(style.utf8)
        case "/tiles.json": return Array(tileJSON.utf8)
        default:
            if path.hasPrefix("/tiles/"), Self.hash(path) % 17 == 0 { return nil }
            return testBody(seed: Int(Self.hash(path) % 1_000_000), size: 64 + Int(Self.hash(path) % 700))
        }
    }

    private func reply(to request: TestUpstream.Request) -> TestUpstream.Reply {
        let faults = lock.withLock {
            counter += 1
            return (self.faults, counter)
        }
        let path = request.target
        if path.hasPrefix("/tiles/") { passGate() }
        if let every = faults.0.failEvery, faults.1 % every == 0 {
            return .respond(status: 500)
        }
        if path == "/style.json", let status = faults.0.styleStatus {
            return .respond(status: status)
        }
        if path.hasPrefix("/tiles/"), let status = faults.0.tileStatus {
            return .respond(status: status)
        }
        guard let body = body(for: path) else { return .respond(status: 404) }
        var reply = TestUpstream.Reply.respond(status: 200, headers: [("Cache-Control", "max-age=3600")], body: body)
        if path.hasPrefix("/tiles/") {
            if Self.hash(path) % 3 == 0 {
                reply = .respond(status: 200, headers: [("Content-Encoding", "gzip")], body: gzip(body))
            }
            if let delay = faults.0.tileDelay { reply = .delayed(delay, reply) }
        }
        return reply
    }

    /// FNV-1a: stable across runs (unlike `hashValue`).
    static func hash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}
