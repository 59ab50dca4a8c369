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
        /// Random misbehaviour of tile requests (see `Chaos`).
        var chaos: Chaos?
        /// Answered for every request instead of anything else (an upstream that never answers: `.hang`).
        var everything: TestUpstream.Reply?
        /// Tile requests answered with a redirect to the same path on `addressBase` (127.0.0.1).
        var redirectTilesToAddress = false
        /// Answered for every tile request (`.hang`: a tile server that never answers).
        var tileReply: TestUpstream.Reply?
        /// Tiles whose path hash is 1 modulo this always answer 500 (a few broken tiles).
        var brokenTileModulus: UInt64?
        /// The first tile request is answered 429 with `Retry-After` as an HTTP-date this far ahead.
        var firstTileRetryAfterDate: Duration?
        /// The status of that answer (429, or 503 which honours `Retry-After` the same way).
        var firstTileRetryAfterStatus = 429
        /// The style and TileJSON are sent `Content-Encoding: gzip`, as nginx's `gzip on` does.
        var gzipDocuments = false
        /// Tile requests arriving while more than this many requests are being served are
        /// answered 429 without `Retry-After` (an upstream limiting concurrency).
        var concurrencyLimit: Int?
    }

    /// Per-tile-request fault chances in percent, drawn from a seeded generator so a failing run
    /// can be replayed with its printed seed.
    struct Chaos {
        var serverError = 10.0
        var reset = 5.0
        var truncate = 2.0
        var tooManyRequests = 2.0
        var drip = 1.0
        /// A 429 carries `Retry-After: 1` (the host pauses for a second) at most this often; the
        /// others say `Retry-After: 0`. Sized so the pauses cost a bounded share of the run.
        var pauseEvery: Duration = .seconds(2)
        var seed: UInt64 = UInt64.random(in: 1...UInt64.max)
    }

    /// What the chaos did, for the test's report and assertions.
    struct ChaosCounts {
        var serverErrors = 0, resets = 0, truncations = 0, tooManyRequests = 0, drips = 0
        /// 429s of `concurrencyLimit`.
        var overLimit = 0
        /// When a 429 with `Retry-After: 1` was answered.
        var pauses: [ContinuousClock.Instant] = []
    }

    private let lock = NSLock()
    /// Made before the first request: building the first DateFormatter loads ICU, which on a
    /// loaded machine delayed the `Retry-After` answer by hundreds of milliseconds, during which
    /// the other pack's requests went on and the pause tests lost their premise. Under `lock`.
    private let httpDates: DateFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        _ = formatter.string(from: Date())
        return formatter
    }()
    private var faults: Faults
    /// Tiles the upstream may still answer before it holds the rest (nil: no limit).
    private let gate = NSCondition()
    private var tileBudget: Int?
    private var stopping = false
    private var held = 0
    private var counter = 0
    private var upstream: TestUpstream!
    private(set) var chaosCounts = ChaosCounts()
    private var lastPause: ContinuousClock.Instant?

    private let host: String

    /// `host` names the upstream in every URL it serves (`localhost` for address-policy tests);
    /// it always listens on 127.0.0.1.
    init(faults: Faults = Faults(), host: String = "127.0.0.1") throws {
        self.faults = faults
        self.host = host
        upstream = try TestUpstream { [unowned self] request in self.reply(to: request) }
    }

    var base: String { "http://\(host):\(upstream.port)" }
    /// The same upstream named by its address, whatever `host` is.
    var addressBase: String { upstream.url("") }
    var requests: [TestUpstream.Request] { upstream.requests }
    var port: Int { upstream.port }
    var maxConcurrentRequests: Int { upstream.maxConcurrentRequests }
    var counts: ChaosCounts { lock.withLock { chaosCounts } }

    /// Changes the faults for the requests still to come.
    func update(_ change: (inout Faults) -> Void) { lock.withLock { change(&faults) } }

    /// Whether `path` is one of the broken tiles of `brokenTileModulus`.
    static func isBroken(_ path: String, modulus: UInt64) -> Bool {
        path.hasPrefix("/tiles/") && hash(path) % modulus == 1
    }
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
        // A query (an upstream rule's token) does not change what is served.
        let path = String(request.target.prefix { $0 != "?" })
        if let everything = faults.0.everything { return everything }
        if path.hasPrefix("/tiles/") { passGate() }
        if path.hasPrefix("/tiles/"), let limit = faults.0.concurrencyLimit, request.concurrent > limit {
            lock.withLock { chaosCounts.overLimit += 1 }
            return .respond(status: 429)
        }
        if let every = faults.0.failEvery, faults.1 % every == 0 {
            return .respond(status: 500)
        }
        if path == "/style.json", let status = faults.0.styleStatus {
            return .respond(status: status)
        }
        if path.hasPrefix("/tiles/"), let status = faults.0.tileStatus {
            return .respond(status: status)
        }
        if path.hasPrefix("/tiles/"), let first = takeFirstTileReply() { return first }
        if let modulus = faults.0.brokenTileModulus, Self.isBroken(path, modulus: modulus) { return .respond(status: 500) }
        if path.hasPrefix("/tiles/"), let reply = faults.0.tileReply { return reply }
        if path.hasPrefix("/tiles/"), faults.0.redirectTilesToAddress {
            return .respond(status: 302, headers: [("Location", addressBase + path)])
        }
        if path.hasPrefix("/tiles/"), let chaos = faults.0.chaos,
           let fault = chaosReply(chaos, path: path, request: faults.1) {
            return fault
        }
        guard let body = body(for: path) else { return .respond(status: 404) }
        var reply = TestUpstream.Reply.respond(status: 200, headers: [("Cache-Control", "max-age=3600")], body: body)
        if faults.0.gzipDocuments, path == "/style.json" || path == "/tiles.json" {
            reply = .respond(status: 200, headers: [("Content-Encoding", "gzip")], body: gzip(body))
        }
        if path.hasPrefix("/tiles/") {
            if Self.hash(path) % 3 == 0 {
                reply = .respond(status: 200, headers: [("Content-Encoding", "gzip")], body: gzip(body))
            }
            if let delay = faults.0.tileDelay { reply = .delayed(delay, reply) }
        }
        return reply
    }

    private func takeFirstTileReply() -> TestUpstream.Reply? {
        guard let (ahead, status) = lock.withLock({ () -> (Duration, Int)? in
            defer { faults.firstTileRetryAfterDate = nil }
            return faults.firstTileRetryAfterDate.map { ($0, faults.firstTileRetryAfterStatus) }
        }) else { return nil }
        let date = lock.withLock { httpDates.string(from: Date().addingTimeInterval(ahead.seconds)) }
        return .respond(status: status, headers: [("Retry-After", date)])
    }

    /// Draws this request's fault, if any. 404 tiles misbehave too (their absence must survive it).
    private func chaosReply(_ chaos: Chaos, path: String, request number: Int) -> TestUpstream.Reply? {
        // Uniform in 0..<100 from the seed and the request's number: random, yet replayable.
        let roll = Double(Self.hash("\(chaos.seed):\(number)") % 1_000_000) / 10_000
        return lock.withLock {
            var bound = chaos.serverError
            if roll < bound {
                chaosCounts.serverErrors += 1
                return .respond(status: 500)
            }
            bound += chaos.reset
            if roll < bound {
                chaosCounts.resets += 1
                return .reset
            }
            let wire = body(for: path).map { Self.hash(path) % 3 == 0 ? gzip($0) : $0 } ?? []
            bound += chaos.truncate
            if roll < bound, wire.count > 1 {
                chaosCounts.truncations += 1
                return .truncate(declared: wire.count, body: Array(wire.prefix(wire.count / 2)))
            }
            bound += chaos.tooManyRequests
            if roll < bound {
                chaosCounts.tooManyRequests += 1
                let now = ContinuousClock.now
                guard lastPause.map({ now - $0 >= chaos.pauseEvery }) ?? true else {
                    return .respond(status: 429, headers: [("Retry-After", "0")])
                }
                lastPause = now
                chaosCounts.pauses.append(now)
                return .respond(status: 429, headers: [("Retry-After", "1")])
            }
            bound += chaos.drip
            if roll < bound, body(for: path) != nil, Self.hash(path) % 3 != 0 {
                chaosCounts.drips += 1
                return .drip(body: wire, chunk: 128, interval: .milliseconds(30))
            }
            return nil
        }
    }

    /// FNV-1a: stable across runs (unlike `hashValue`).
    static func hash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}

