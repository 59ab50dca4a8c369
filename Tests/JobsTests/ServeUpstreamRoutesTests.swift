import Foundation
import PackdTestSupport
import Testing

/// The routes that reach the upstream through `packd serve`'s own fetcher: estimates of style
/// regions and read-through resources, against the in-process map upstream.
@Suite struct ServeUpstreamRoutesTests {
    @Test func estimateCountsWhatTheDownloadThenStoresAndPricesItFromStoredTiles() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        var stopped = false
        defer { if !stopped { _ = server.remove() } }
        let region = PackDownloadTests.region(upstream, maxZoom: 4)
        let planned = try PackDownloadTests.planned(upstream, maxZoom: 4)

        let before = try server.exchange("POST", "/v1/estimates", json: ["region": region])
        #expect(before.status == 200, "\(String(decoding: before.body, as: UTF8.self))")
        let estimate = try before.decodedJSON()
        #expect(estimate["expected_resources"] as? Int == planned.count)
        #expect(estimate["tiles"] as? Int == planned.filter { $0.tile != nil }.count)
        #expect(estimate["estimated_bytes"] is NSNull)

        let created = try server.exchange("POST", "/v1/packs", json: ["region": region])
        let packID = try #require(try created.decodedJSON()["id"] as? Int)
        let pack = server.waitForEnd(packID)
        #expect(pack["state"] as? String == "complete", "\(pack)")
        let progress = try #require(pack["progress"] as? [String: Any])

        // Every tile of each zoom is sampled, so the estimate is the stored tile bytes exactly.
        let after = try server.exchange("POST", "/v1/estimates", json: ["region": region]).decodedJSON()
        #expect(after["sampled_tiles"] as? Int == progress["completed_tiles"] as? Int)
        #expect(after["estimated_bytes"] as? Int == progress["completed_tile_bytes"] as? Int)

        // An upstream that is not there: 502 naming the URL.
        let unreachable = try server.exchange("POST", "/v1/estimates", json: ["region": [
            "style_url": "http://127.0.0.1:1/style.json", "bounds": [0, 0, 1, 1], "min_zoom": 0, "max_zoom": 1] as [String: Any]])
        #expect(unreachable.status == 502)
        #expect(try unreachable.decodedJSON()["url"] as? String == "http://127.0.0.1:1/style.json")
        stopped = true
        #expect(server.remove() == 0)
    }

    @Test func readThroughFetchesAMissOnceStoresItAndServesIt() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        var stopped = false
        defer { if !stopped { _ = server.remove() } }
        let sprite = upstream.base + "/sprite.json"
        let path = PackdServer.resourcePath

        #expect(try server.exchange("GET", path(sprite, false)).status == 404)
        let fetched = try server.exchange("GET", path(sprite, true))
        #expect(fetched.status == 200)
        #expect(fetched.body == upstream.body(for: "/sprite.json"))
        // Now stored (fresh for an hour): served without asking the upstream again.
        #expect(try server.exchange("GET", path(sprite, true)).body == fetched.body)
        #expect(try server.exchange("GET", path(sprite, false)).body == fetched.body)
        #expect(upstream.requests.filter { $0.target == "/sprite.json" }.count == 1)

        // A gzip-encoded answer is stored and served decoded.
        let tiles = (0..<64).map { "/tiles/6/\($0)/1.pbf" }
        let gzipped = try #require(tiles.first { MapUpstream.hash($0) % 3 == 0 && MapUpstream.hash($0) % 17 != 0 })
        let tile = try server.exchange("GET", path(upstream.base + gzipped, true))
        #expect(tile.status == 200)
        #expect(tile.body == upstream.body(for: gzipped))

        // The upstream's 404 is a 404; an upstream that is not there a 502.
        let missing = try #require(tiles.first { MapUpstream.hash($0) % 17 == 0 })
        #expect(try server.exchange("GET", path(upstream.base + missing, true)).status == 404)
        let unreachable = try server.exchange("GET", path("http://127.0.0.1:1/a.json", true))
        #expect(unreachable.status == 502)
        #expect(try unreachable.decodedJSON()["type"] as? String == "urn:packd:problem:upstream-failed")
        stopped = true
        #expect(server.remove() == 0)
    }

    @Test func readThroughRespectsTheAddressPolicy() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        // Without --allow-upstream-hosts, loopback is off limits.
        let server = try PackdServer(allowsLoopbackUpstream: false)
        defer { _ = server.remove() }
        let refused = try server.exchange("GET", PackdServer.resourcePath(upstream.base + "/sprite.json", fetch: true))
        #expect(refused.status == 422)
        #expect(try refused.decodedJSON()["type"] as? String == "urn:packd:problem:host-not-allowed")
        #expect(upstream.requests.isEmpty)
    }
}
