import Foundation

/// `LabelWorld` served on 127.0.0.1: the style, TileJSON, tiles (gzip-encoded, as tile servers
/// send them; empty tiles as `204`), the GeoJSON and test glyph ranges. It counts what it was asked.
public final class LabelUpstream: @unchecked Sendable {
    private var upstream: TestUpstream!
    public private(set) var world: LabelWorld!
    /// Extra places served from now on (a refresh bringing new text).
    private let lock = NSLock()
    private var renamed: [String: String] = [:]

    public init() throws {
        upstream = try TestUpstream { [unowned self] request in self.reply(to: request) }
        world = LabelWorld(base: upstream.url(""))
    }

    public var styleURL: String { upstream.url("/style.json") }
    public var requests: [TestUpstream.Request] { upstream.requests }

    /// Glyph ranges requested, as `stack/range` paths.
    public var glyphRequests: [String] {
        requests.map(\.target).filter { $0.hasPrefix("/fonts/") }.map { String($0.dropFirst("/fonts/".count)) }
    }

    /// From now on, every label `from` reads `to` (tiles change: a refresh brings new text).
    public func rename(_ from: String, to: String) {
        lock.withLock { renamed[from] = to }
    }

    public func stop() { upstream.stop() }

    private func reply(to request: TestUpstream.Request) -> TestUpstream.Reply {
        let path = String(request.target.prefix { $0 != "?" })
        let json = [("Content-Type", "application/json")]
        switch path {
        case "/style.json": return .respond(status: 200, headers: json, body: Array(world.style.utf8))
        case "/tiles.json": return .respond(status: 200, headers: json, body: Array(world.tileJSON.utf8))
        case "/pois.geojson": return .respond(status: 200, headers: json, body: Array(LabelWorld.geoJSON.utf8))
        default: break
        }
        if path.hasPrefix("/fonts/") {
            let parts = path.dropFirst("/fonts/".count).split(separator: "/")
            guard parts.count == 2 else { return .respond(status: 404) }
            return .respond(status: 200, headers: [("Content-Type", "application/x-protobuf")],
                            body: LabelWorld.testGlyphs(stack: String(parts[0]), range: String(parts[1])))
        }
        let numbers = path.dropFirst("/tiles/".count).replacingOccurrences(of: ".pbf", with: "").split(separator: "/").compactMap { Int($0) }
        guard path.hasPrefix("/tiles/"), numbers.count == 3 else { return .respond(status: 404) }
        var tile = LabelWorld.tile(z: numbers[0], x: numbers[1], y: numbers[2])
        let renames = lock.withLock { renamed }
        if !renames.isEmpty { tile = LabelWorld.tile(z: numbers[0], x: numbers[1], y: numbers[2], renaming: renames) }
        guard !tile.isEmpty else { return .respond(status: 204) }
        return .respond(status: 200, headers: [("Content-Encoding", "gzip"), ("Content-Type", "application/x-protobuf")],
                        body: gzip(tile))
    }
}
