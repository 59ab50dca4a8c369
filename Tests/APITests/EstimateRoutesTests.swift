import Foundation
import PackdTestSupport
import Packs
import Store
import Testing
@testable import API

/// `POST /v1/estimates`: computed counts per source and zoom, resources by kind, a byte
/// estimate from stored tiles, and precise problems for bad regions and failing upstreams.
@Suite struct EstimateRoutesTests {
    private func estimate(_ server: RoutesFixture, _ region: String) throws -> RoutesFixture.Reply {
        try server.send("POST", "/v1/estimates", json: #"{"region": \#(region)}"#)
    }

    @Test func templateRegionIsCountedPerZoomWithoutAnyUpstream() throws {
        try RoutesFixture.using { server throws in
            let reply = try estimate(server, RoutesFixture.templateRegion(maxZoom: 2))
            #expect(reply.status == 200, "\(reply.body)")
            let body = reply.json
            #expect(body["tiles"] as? Int == 21)
            #expect(body["expected_resources"] as? Int == 21)
            #expect(body["exact"] as? Bool == true)
            #expect(body["estimated_bytes"] is NSNull)
            #expect(body["sampled_tiles"] as? Int == 0)
            #expect(body["tile_limit"] is NSNull)
            #expect(body["within_tile_limit"] as? Bool == true)
            let source = try #require((body["sources"] as? [[String: Any]])?.first)
            #expect(source["source"] as? String == "tiles")
            #expect(source["type"] as? String == "tiles")
            #expect(source["min_zoom"] as? Int == 0 && source["max_zoom"] as? Int == 2)
            let zooms = try #require(source["zooms"] as? [[String: Any]])
            #expect(zooms.map { $0["tiles"] as? Int } == [1, 4, 16])
            let resources = try #require(body["resources"] as? [String: Int])
            #expect(resources == ["styles": 0, "tilejsons": 0, "sprites": 0, "glyphs": 0, "data": 0])
            // Nothing was stored.
            #expect((try server.send("GET", "/v1/packs").json["packs"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func billionsOfTilesAreComputedNotEnumerated() throws {
        try RoutesFixture.using { server throws in
            // The whole world to z30: (4^31 - 1) / 3 tiles, in closed form.
            let world = try estimate(server, RoutesFixture.templateRegion(maxZoom: 30, bounds: "[-180, -90, 180, 90]"))
            #expect(world.status == 200, "\(world.body)")
            #expect(world.json["tiles"] as? Int == 1_537_228_672_809_129_301)
            #expect(world.json["exact"] as? Bool == true)
            // A polygon as large: swept while the budget lasts, the deep zooms extrapolated and marked.
            let polygon = #"{"tiles": ["https://t.example/{z}/{x}/{y}.png"], "min_zoom": 0, "max_zoom": 30, "geometry": {"type": "Polygon", "coordinates": [[[-170, -80], [170, -80], [170, 80], [-170, 80], [-170, -80]]]}}"#
            let swept = try estimate(server, polygon)
            #expect(swept.status == 200, "\(swept.body)")
            #expect(swept.json["exact"] as? Bool == false)
            let zooms = try #require(((swept.json["sources"] as? [[String: Any]])?.first?["zooms"]) as? [[String: Any]])
            #expect(zooms.count == 31)
            #expect(zooms.first?["exact"] as? Bool == true && zooms.last?["exact"] as? Bool == false)
            let tiles = zooms.compactMap { $0["tiles"] as? Int }
            #expect(tiles.count == 31 && zip(tiles, tiles.dropFirst()).allSatisfy { $0 <= $1 })
            #expect(tiles[30] > 1 << 59 && tiles[30] <= 1 << 60)
        }
    }

    @Test func storedTilesOfTheSameSourceGiveTheByteEstimate() throws {
        try RoutesFixture.using { server throws in
            // The z1 tiles of the template are stored: 100 and 300 bytes, a "no content" one (0 bytes).
            let template = "https://tiles.example.org/{z}/{x}/{y}.png"
            let writes = [(0, 0, 100), (1, 0, 300), (0, 1, nil)].map { x, y, size -> ResourceWrite in
                ResourceWrite(key: .tile(TileKey(urlTemplate: template, z: 1, x: Int64(x), y: Int64(y))),
                              content: size.map { .body(StoredBody(data: Array(repeating: 7, count: $0), compressed: false)) } ?? .noContent)
            }
            let done = DispatchSemaphore(value: 0)
            server.writer.perform({ database in _ = database.apply(writes, now: 1) }, completion: { _ in done.signal() })
            done.wait()
            let reply = try estimate(server, RoutesFixture.templateRegion(maxZoom: 1))
            #expect(reply.status == 200, "\(reply.body)")
            // z1: 4 tiles at its own average (400 / 3); z0: 1 tile at the source's average (the same).
            #expect(reply.json["sampled_tiles"] as? Int == 3)
            #expect(reply.json["estimated_bytes"] as? Int == 667)
            // An unrelated template has no sizes.
            let other = try estimate(server, #"{"tiles": ["https://other.example/{z}/{x}/{y}.png"], "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 1}"#)
            #expect(other.json["estimated_bytes"] is NSNull)
        }
    }

    @Test func badRegionsGetPointersAsPackCreationDoes() throws {
        try RoutesFixture.using { server throws in
            let reply = try server.send("POST", "/v1/estimates", json: #"{"region": {"tiles": ["https://t.example/{z}/{x}/{y}.png"], "bounds": [0, 0, 1, 1], "min_zoom": 5, "max_zoom": 31}, "name": "x"}"#)
            #expect(reply.status == 422)
            let pointers = (reply.json["errors"] as? [[String: Any]])?.compactMap { $0["pointer"] as? String } ?? []
            #expect(pointers.contains("/region/max_zoom"))
            #expect(pointers.contains("/name"))
            #expect(try server.send("POST", "/v1/estimates", json: #"{}"#).json["errors"].map { "\($0)".contains("/region") } == true)
            #expect(try server.send("POST", "/v1/estimates", json: "not json").status == 400)
            #expect(try server.send("POST", "/v1/estimates", body: Array(#"{"region": {}}"#.utf8), headers: ["Content-Type": "text/plain"]).status == 415)
            // A style region needs upstream access, which this fixture has not plugged in.
            let style = try estimate(server, #"{"style_url": "https://example.com/style.json", "bounds": [0, 0, 1, 1], "min_zoom": 0, "max_zoom": 2}"#)
            #expect(style.status == 503)
        }
    }

    @Test func styleRegionFetchesItsDocumentsAndCountsEverySource() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            let base = "https://maps.example"
            upstream.serve(base + "/style.json", """
                {"version": 8, "sprite": "\(base)/sprite", "glyphs": "\(base)/fonts/{fontstack}/{range}.pbf",
                 "sources": {"v": {"type": "vector", "url": "\(base)/v.json"},
                             "r": {"type": "raster", "tiles": ["\(base)/r/{z}/{x}/{y}.png"], "tileSize": 256, "maxzoom": 3},
                             "g": {"type": "geojson", "data": "\(base)/data.geojson"}},
                 "layers": [{"id": "t", "type": "symbol", "source": "v", "source-layer": "x", "layout": {"text-field": "a", "text-font": ["Sans"]}}]}
                """)
            upstream.serve(base + "/v.json", #"{"tiles": ["\#(base)/v/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 14}"#)
            let region = #"{"style_url": "\#(base)/style.json", "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 2, "include_ideographs": false}"#
            let reply = try estimate(server, region)
            #expect(reply.status == 200, "\(reply.body)")
            let sources = try #require(reply.json["sources"] as? [[String: Any]])
            let byID = Dictionary(uniqueKeysWithValues: sources.compactMap { source in (source["source"] as? String).map { ($0, source) } })
            // 256 px raster tiles cover one zoom deeper (1…3), vector tiles the region's zooms.
            #expect(byID["r"]?["type"] as? String == "raster")
            #expect(byID["r"]?["min_zoom"] as? Int == 1 && byID["r"]?["max_zoom"] as? Int == 3)
            #expect(byID["r"]?["tiles"] as? Int == 4 + 16 + 64)
            #expect(byID["v"]?["type"] as? String == "vector" && byID["v"]?["tiles"] as? Int == 21)
            let resources = try #require(reply.json["resources"] as? [String: Int])
            #expect(resources["styles"] == 1 && resources["tilejsons"] == 1 && resources["sprites"] == 4 && resources["data"] == 1)
            // One font stack: 130 of the 256 glyph ranges without CJK and Hangul.
            #expect(resources["glyphs"] == 130)
            let fixed = resources.values.reduce(0, +)
            #expect(reply.json["expected_resources"] as? Int == fixed + 84 + 21)
            #expect(upstream.requests.sorted() == [base + "/style.json", base + "/v.json"])
        }
    }

    @Test func aPMTilesRegionIsCountedFromItsArchivesHeaderReadWithARange() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            let url = "https://cdn.example/world.pmtiles"
            upstream.serveFile(url, ArchiveFixture(maxZoom: 4).bytes)
            let reply = try estimate(server, #"{"pmtiles": "\#(url)", "bounds": [-180, -85, 180, 85], "min_zoom": 0}"#)
            #expect(reply.status == 200, "\(reply.body)")
            // The archive's zooms, 1…4 (its only z0 tile is absent): every tile of the world from z1
            // to z4 (max_zoom omitted), and its TileJSON.
            #expect(reply.json["tiles"] as? Int == 4 + 16 + 64 + 256, "\(reply.json["sources"] ?? "")")
            #expect(reply.json["expected_resources"] as? Int == 1 + 4 + 16 + 64 + 256)
            #expect((reply.json["resources"] as? [String: Int])?["tilejsons"] == 1)
            // The header and root directory in one read of the first 16 KiB (the metadata with them).
            #expect(upstream.requests == [url + " bytes=0-16383"])
        }
    }

    @Test func anArchiveWhoseServerIgnoresRangeIsAnUpstreamFailure() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            let url = "https://cdn.example/world.pmtiles"
            upstream.answer(url, .failure(UpstreamFailure(code: "range_not_supported")))
            let reply = try estimate(server, #"{"pmtiles": "\#(url)", "bounds": [0, 0, 1, 1], "max_zoom": 3}"#)
            #expect(reply.status == 502, "\(reply.body)")
            #expect(reply.json["url"] as? String == url)
            #expect((reply.json["detail"] as? String)?.contains("ignores Range") == true)
            let notAnArchive = "https://cdn.example/not.pmtiles"
            upstream.serveFile(notAnArchive, Array(repeating: 7, count: 500))
            let style = #"{"version": 8, "sources": {"a": {"type": "vector", "url": "pmtiles://\#(notAnArchive)"}}, "layers": []}"#
            upstream.serve("https://cdn.example/style.json", style)
            let invalid = try estimate(server, #"{"style_url": "https://cdn.example/style.json", "bounds": [0, 0, 1, 1], "max_zoom": 3}"#)
            #expect(invalid.status == 502, "\(invalid.body)")
            #expect((invalid.json["detail"] as? String)?.contains("not a PMTiles archive") == true)
        }
    }

    @Test func manyTileJSONsAreAllFetchedInBatches() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            let base = "https://maps.example"
            let ids = (0..<20).map { "s\($0)" }
            let sources = ids.map { #""\#($0)": {"type": "vector", "url": "\#(base)/\#($0).json"}"# }.joined(separator: ", ")
            upstream.serve(base + "/style.json", #"{"version": 8, "sources": {\#(sources)}, "layers": []}"#)
            for id in ids { upstream.serve(base + "/\(id).json", #"{"tiles": ["\#(base)/\#(id)/{z}/{x}/{y}.pbf"]}"#) }
            let reply = try estimate(server, #"{"style_url": "\#(base)/style.json", "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 1}"#)
            #expect(reply.status == 200, "\(reply.body)")
            #expect((reply.json["sources"] as? [Any])?.count == 20)
            #expect(reply.json["tiles"] as? Int == 20 * 5)
            #expect((reply.json["resources"] as? [String: Int])?["tilejsons"] == 20)
            #expect(upstream.requests.count == 21)
        }
    }

    @Test func upstreamFailuresAreBadGatewayNamingTheURL() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            let region = { (url: String) in #"{"style_url": "\#(url)", "bounds": [0, 0, 1, 1], "min_zoom": 0, "max_zoom": 1}"# }
            // The style 404s.
            let missing = try estimate(server, region("https://maps.example/missing.json"))
            #expect(missing.status == 502)
            #expect(missing.json["type"] as? String == "urn:packd:problem:upstream-failed")
            #expect(missing.json["upstream_status"] as? Int == 404)
            #expect(missing.json["url"] as? String == "https://maps.example/missing.json")
            // A transport failure of a TileJSON names the TileJSON, without user info.
            upstream.serve("https://maps.example/style.json", #"{"version": 8, "sources": {"v": {"type": "vector", "url": "https://user:secret@maps.example/v.json"}}, "layers": []}"#)
            upstream.answer("https://user:secret@maps.example/v.json", .failure(UpstreamFailure(code: "timeout")))
            let timedOut = try estimate(server, region("https://maps.example/style.json"))
            #expect(timedOut.status == 502)
            #expect(timedOut.json["url"] as? String == "https://maps.example/v.json")
            #expect(!timedOut.body.contains("secret"))
            #expect((timedOut.json["detail"] as? String)?.contains("timeout") == true)
            // A style that is not one.
            upstream.serve("https://maps.example/bad.json", "[1, 2]")
            let bad = try estimate(server, region("https://maps.example/bad.json"))
            #expect(bad.status == 502)
            #expect((bad.json["detail"] as? String)?.contains("style_not_json") == true)
            // The address policy refusing the host is the request's problem, not the upstream's.
            upstream.answer("https://intranet.example/style.json", .failure(UpstreamFailure(code: "blocked_address", hostNotAllowed: true)))
            let blocked = try estimate(server, region("https://intranet.example/style.json"))
            #expect(blocked.status == 422)
            #expect(blocked.json["type"] as? String == "urn:packd:problem:host-not-allowed")
            #expect((blocked.json["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "/region/style_url")
        }
    }

    /// A style URL libcurl would refuse (schemathesis found this one: its IDN host cannot be
    /// converted) is the request's 422 at `/region/style_url`, not the upstream's 502 — and
    /// nothing is asked of the upstream.
    @Test func aStyleURLLibcurlRefusesIs422() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            for url in ["htTp://ålč¨#…", "htTpS://^🌥?b"] {
                let refused = try estimate(server, #"{"style_url": "\#(url)", "bounds": [0, 0, 1, 1], "min_zoom": 0, "max_zoom": 1}"#)
                #expect(refused.status == 422, "\(url)")
                let errors = refused.json["errors"] as? [[String: Any]]
                #expect(errors?.first?["pointer"] as? String == "/region/style_url")
                #expect((errors?.first?["detail"] as? String)?.contains("libcurl") == true)
            }
            #expect(upstream.requests.isEmpty)
        }
    }
}

