import Foundation
import Glibc
import PackdTestSupport
import Plan
import Testing

/// `packd serve` downloads a pack from the in-process upstream, the upstream stops, and every
/// resource the pack was planned to hold is served at its offline URL with the upstream's bytes:
/// the keys serving looks up are the keys the real download stored.
@Suite struct OfflineServeTests {
    @Test func downloadedPackIsServedWithTheUpstreamStopped() throws {
        let upstream = try MapUpstream()
        var upstreamRunning = true
        defer { if upstreamRunning { upstream.stop() } }
        let packd = try PackdServer()
        var packdRunning = true
        defer { if packdRunning { _ = packd.remove() } }
        let port = packd.port

        let maxZoom = 3
        let created = try packd.exchange("POST", "/v1/packs", json: ["region": PackDownloadTests.region(upstream, maxZoom: maxZoom)])
        let packID = try #require(try created.decodedJSON()["id"] as? Int)
        let pack = packd.waitForEnd(packID)
        try #require(pack["state"] as? String == "complete", "\(pack)")
        upstream.stop()
        upstreamRunning = false

        func get(_ url: String) throws -> BinaryExchange {
            let path = try #require(url.range(of: "/v1/packs/").map { String(url[$0.lowerBound...]) }, "\(url) is not packd's")
            return try BinaryExchange.send(port: port, method: "GET", path: path)
        }
        let style = try BinaryExchange.send(port: port, method: "GET", path: "/v1/packs/\(packID)/style.json")
        #expect(style.status == 200)
        #expect(!String(decoding: style.body, as: UTF8.self).contains(upstream.base), "the style still points upstream")
        let styleObject = try style.decodedJSON()
        let tileJSONURL = try #require(((styleObject["sources"] as? [String: Any])?["v"] as? [String: Any])?["url"] as? String)
        let tileJSON = try get(tileJSONURL)
        let tiles = try #require((try tileJSON.decodedJSON()["tiles"] as? [String])?.first)
        let sprite = try #require(styleObject["sprite"] as? String)
        let glyphs = try #require(styleObject["glyphs"] as? String)

        var served = 0
        let planned = try PackDownloadTests.planned(upstream, maxZoom: maxZoom)
        for resource in planned {
            let path = PackDownloadTests.path(resource.url, upstream)
            let offline: String
            if let tile = resource.tile {
                offline = tiles.replacingOccurrences(of: "{z}/{x}/{y}", with: "\(tile.z)/\(tile.x)/\(tile.y)")
            } else if path.hasPrefix("/sprite") {
                offline = sprite + path.dropFirst("/sprite".count)
            } else if path.hasPrefix("/fonts/") {
                let parts = path.split(separator: "/")
                offline = glyphs.replacingOccurrences(of: "{fontstack}", with: String(parts[1]))
                    .replacingOccurrences(of: "{range}.pbf", with: String(parts[2]))
            } else {
                continue  // the style and the TileJSON: served rewritten, checked above
            }
            let reply = try get(offline)
            if let expected = upstream.body(for: path) {
                #expect(reply.status == 200, "\(offline)")
                #expect(reply.body == expected, "\(offline) differs from the upstream's \(path)")
            } else {
                #expect(reply.status == 204, "\(offline): the upstream answered 404, stored as no content")
            }
            served += 1
        }
        #expect(served == planned.count - 2, "every planned resource but the two documents was checked")
        #expect(served > 4 + 130, "tiles, four sprite files and 130 glyph ranges")
        let outside = tiles.replacingOccurrences(of: "{z}/{x}/{y}", with: "\(maxZoom + 1)/0/0")
        #expect(try get(outside).status == 404, "a zoom the pack does not hold")

        packdRunning = false
        #expect(packd.remove() == 0)
    }
}
