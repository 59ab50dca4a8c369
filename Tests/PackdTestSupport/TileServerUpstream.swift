import Foundation

/// A map server on 127.0.0.1 for downloads a test checks body by body: a style with one vector
/// source, its TileJSON, and tiles whose bodies derive from their path (every third sent
/// gzip-encoded, as tile servers do). It counts what it was asked — per path (a tile fetched
/// twice), and at most at once (a per-host cap).
public final class TileServerUpstream: @unchecked Sendable {
    private var upstream: TestUpstream!
    private let tileDelay: Duration?

    /// `tileDelay` holds each tile answer that long (concurrency builds up; a download lasts).
    public init(tileDelay: Duration? = nil) throws {
        self.tileDelay = tileDelay
        upstream = try TestUpstream { [unowned self] request in self.reply(to: request) }
    }

    deinit { upstream.stop() }

    public var base: String { upstream.url("") }
    public var styleURL: String { base + "/style.json" }
    public var tileTemplate: String { base + "/tiles/{z}/{x}/{y}.pbf" }

    /// Most requests the upstream was serving at once.
    public var maxConcurrentRequests: Int { upstream.maxConcurrentRequests }

    /// How often each tile path was requested.
    public var tileRequests: [String: Int] {
        var counts: [String: Int] = [:]
        for request in upstream.requests where request.target.hasPrefix("/tiles/") { counts[request.target, default: 0] += 1 }
        return counts
    }

    public var style: String {
        """
        {"version": 8, "sources": {"v": {"type": "vector", "url": "\(base)/tiles.json"}},
         "layers": [{"id": "water", "type": "fill", "source": "v", "source-layer": "water"}]}
        """
    }

    public var tileJSON: String {
        #"{"tilejson": "3.0.0", "tiles": [""# + tileTemplate + #""], "minzoom": 0, "maxzoom": 14}"#
    }

    /// The body served for a tile (decoded): 64 to 700 bytes derived from the path.
    public static func tileBody(_ path: String) -> [UInt8] {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return testBody(seed: Int(hash % 1_000_000), size: 64 + Int(hash % 637))
    }

    private func reply(to request: TestUpstream.Request) -> TestUpstream.Reply {
        switch request.target {
        case "/style.json": return .respond(status: 200, body: Array(style.utf8))
        case "/tiles.json": return .respond(status: 200, body: Array(tileJSON.utf8))
        default:
            guard request.target.hasPrefix("/tiles/") else { return .respond(status: 404) }
            let body = Self.tileBody(request.target)
            let reply: TestUpstream.Reply = body.count % 3 == 0
                ? .respond(status: 200, headers: [("Content-Encoding", "gzip")], body: gzip(body))
                : .respond(status: 200, body: body)
            return tileDelay.map { .delayed($0, reply) } ?? reply
        }
    }
}
