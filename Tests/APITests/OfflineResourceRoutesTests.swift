import CZlib
import Foundation
import PackdTestSupport
import Packs
import Store
import Testing
@testable import API

/// `/v1/packs/{id}/style.json` and the resource URLs it points at, through a real server and a
/// real database whose rows are stored as the download stores them (`StoredBody.encoding` of the
/// upstream's bytes, linked to the pack).
@Suite struct OfflineResourceRoutesTests {
    static let upstream = "https://maps.example.org"

    /// What the imagined upstream serves: path → bytes as sent (some gzip-encoded, as tile
    /// servers do), and the tiles it answered 404 for.
    struct Upstream {
        var bodies: [String: [UInt8]] = [:]
        var gzipEncoded: Set<String> = []
        var noContent: [String] = []

        func decoded(_ url: String) -> [UInt8]? { bodies[url] }
    }

    static let style = """
        {"version": 8, "name": "offline test",
         "sources": {
           "vec": {"type": "vector", "url": "\(upstream)/tiles.json"},
           "sat": {"type": "raster", "tiles": ["\(upstream)/sat/{z}/{x}/{y}.png"], "tileSize": 256, "maxzoom": 1},
           "places": {"type": "geojson", "data": "\(upstream)/places.geojson"},
           "inline-points": {"type": "geojson", "data": {"type": "FeatureCollection", "features": []}},
           "overlay": {"type": "image", "url": "\(upstream)/overlay.png",
                       "coordinates": [[-10, 10], [10, 10], [10, -10], [-10, -10]]}
         },
         "sprite": [{"id": "default", "url": "\(upstream)/sprites/base"}, {"id": "icons maki", "url": "\(upstream)/sprites/maki?v=2"}],
         "glyphs": "\(upstream)/fonts/{fontstack}/{range}.pbf",
         "layers": [{"id": "bg", "type": "background", "paint": {"background-color": "#a0c8f0"}},
                    {"id": "labels", "type": "symbol", "source": "vec", "source-layer": "x",
                     "layout": {"text-field": "a", "text-font": ["Noto Sans Regular", "Arial Unicode MS Regular"]}}]}
        """

    static let tileJSON = #"{"tilejson": "3.0.0", "tiles": ["\#(upstream)/tiles/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 2, "vector_layers": []}"#

    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 40)

    /// A protobuf-looking, compressible tile body.
    static func vectorTile(_ z: Int, _ x: Int, _ y: Int) -> [UInt8] {
        Array("\u{1A}tile \(z)/\(x)/\(y) ".utf8) + Array(repeating: UInt8(z * 16 + x), count: 300)
    }

    /// Creates a style pack and stores every resource and tile of it as the download would.
    static func storePack(in server: RoutesFixture, headers: [String: String] = [:]) throws -> (packID: Int, upstream: Upstream) {
        let created = try server.send("POST", "/v1/packs", json: """
            {"region": {"style_url": "\(upstream)/style.json", "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 1}, "start": false}
            """, headers: headers)
        #expect(created.status == 201, "\(created.body)")
        let packID = try #require(created.json["id"] as? Int)
        var world = Upstream()
        var writes: [ResourceWrite] = []
        func resource(_ url: String, _ kind: ResourceKind, _ body: [UInt8], etag: String? = nil) throws {
            world.bodies[url] = body
            writes.append(ResourceWrite(key: .resource(url: url, kind: kind), content: .body(try StoredBody.encoding(body)),
                                        cache: HTTPCacheHeaders(modified: 1_790_000_000, etag: etag), packID: Int64(packID)))
        }
        try resource("\(upstream)/style.json", .style, Array(style.utf8), etag: "\"style-v1\"")
        try resource("\(upstream)/tiles.json", .source, Array(tileJSON.utf8))
        try resource("\(upstream)/places.geojson", .source,
                     Array(String(repeating: #"{"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {}}, "#, count: 20).utf8))
        try resource("\(upstream)/overlay.png", .image, png)
        for (base, query) in [("\(upstream)/sprites/base", ""), ("\(upstream)/sprites/maki", "?v=2")] {
            for suffix in [".json", "@2x.json"] { try resource(base + suffix + query, .spriteJSON, Array(#"{"dot": {"x": 0, "y": 0, "width": 4, "height": 4, "pixelRatio": 1}}"#.utf8)) }
            for suffix in [".png", "@2x.png"] { try resource(base + suffix + query, .spriteImage, png + Array((base + suffix).utf8)) }
        }
        for start in [0, 256] {
            try resource("\(upstream)/fonts/Noto%20Sans%20Regular%2cArial%20Unicode%20MS%20Regular/\(start)-\(start + 255).pbf", .glyphs,
                         Array(repeating: UInt8(start / 256 + 1), count: 500))
        }
        for z in 0...1 {
            for x in 0..<(1 << z) {
                for y in 0..<(1 << z) {
                    let vectorURL = "\(upstream)/tiles/\(z)/\(x)/\(y).pbf"
                    let vectorKey = ResourceKey.tile(TileKey(urlTemplate: "\(upstream)/tiles/{z}/{x}/{y}.pbf", z: Int64(z), x: Int64(x), y: Int64(y)))
                    if z == 1 && x == 1 && y == 0 {
                        world.noContent.append(vectorURL)
                        writes.append(ResourceWrite(key: vectorKey, content: .noContent, packID: Int64(packID)))
                    } else {
                        // Every other tile arrived gzip-encoded; the store keeps it as zlib either way.
                        let body = vectorTile(z, x, y)
                        world.bodies[vectorURL] = body
                        let sent = (x + y) % 2 == 0 ? gzip(body) : body
                        if (x + y) % 2 == 0 { world.gzipEncoded.insert(vectorURL) }
                        writes.append(ResourceWrite(key: vectorKey, content: .body(try StoredBody.encoding(sent)),
                                                    cache: HTTPCacheHeaders(etag: "\"t\(z)-\(x)-\(y)\""), packID: Int64(packID)))
                    }
                    let rasterURL = "\(upstream)/sat/\(z)/\(x)/\(y).png"
                    world.bodies[rasterURL] = png + [UInt8(z), UInt8(x), UInt8(y)]
                    writes.append(ResourceWrite(key: .tile(TileKey(urlTemplate: "\(upstream)/sat/{z}/{x}/{y}.png", z: Int64(z), x: Int64(x), y: Int64(y))),
                                                content: .body(try StoredBody.encoding(png + [UInt8(z), UInt8(x), UInt8(y)])), packID: Int64(packID)))
                }
            }
        }
        // A z2 tile in the ambient cache only: not part of the pack.
        writes.append(ResourceWrite(key: .tile(TileKey(urlTemplate: "\(upstream)/tiles/{z}/{x}/{y}.pbf", z: 2, x: 0, y: 0)),
                                    content: .body(try StoredBody.encoding(vectorTile(2, 0, 0)))))
        let batch = writes
        try server.writeNow { database in
            let outcome = database.apply(batch, now: 1_790_000_000)
            if let error = outcome.error { throw error }
        }
        return (packID, world)
    }

    func withPack(withKeys: Bool = false, _ body: (RoutesFixture, Int, Upstream) throws -> Void) throws {
        let server = try RoutesFixture(withKeys: withKeys, cors: CORSPolicy(allowedOrigins: .any))
        defer {
            server.stop()
            server.removeFiles()
        }
        let key = withKeys ? ["Authorization": "Bearer \(RoutesFixture.writeKey)"] : [:]
        let (packID, world) = try Self.storePack(in: server, headers: key)
        try body(server, packID, world)
    }

    /// The path and query of an absolute URL that must point at the test server.
    func target(_ url: String, _ server: RoutesFixture) -> String {
        #expect(url.hasPrefix("http://127.0.0.1"), "\(url) is not on packd")
        guard let path = url.range(of: "/v1/packs/") else { return url }
        return String(url[path.lowerBound...])
    }

    @Test func everyURLInTheStyleServesTheUpstreamBytes() throws {
        try withPack { server, packID, world in
            let reply = try server.sendBytes("GET", "/v1/packs/\(packID)/style.json")
            #expect(reply.status == 200)
            #expect(reply.header("Content-Type") == "application/json")
            let style = try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])
            let sources = try #require(style["sources"] as? [String: [String: Any]])
            let base = "http://127.0.0.1:\(server.port)/v1/packs/\(packID)"
            #expect(sources["vec"]?["url"] as? String == "\(base)/sources/vec.json")
            #expect(sources["sat"]?["tiles"] as? [String] == ["\(base)/tiles/sat/{z}/{x}/{y}"])
            #expect(sources["places"]?["data"] as? String == "\(base)/sources/places/data")
            #expect(sources["overlay"]?["url"] as? String == "\(base)/sources/overlay/data")
            #expect(sources["inline-points"]?["data"] is [String: Any], "inline GeoJSON stays inline")
            #expect(style["glyphs"] as? String == "\(base)/glyphs/{fontstack}/{range}.pbf")
            let sprites = try #require(style["sprite"] as? [[String: String]])
            #expect(sprites.map { $0["url"] } == ["\(base)/sprites/default/sprite", "\(base)/sprites/icons%20maki/sprite"])
            #expect(!String(decoding: reply.body, as: UTF8.self).contains(Self.upstream), "no URL may still point upstream")

            // The TileJSON's tiles point at packd, XYZ.
            let tileJSONReply = try server.sendBytes("GET", target(sources["vec"]?["url"] as? String ?? "", server))
            #expect(tileJSONReply.status == 200)
            let tileJSON = RoutesFixture.Reply(status: tileJSONReply.status, headers: tileJSONReply.headers, body: String(decoding: tileJSONReply.body, as: UTF8.self))
            #expect(tileJSON.json["tiles"] as? [String] == ["\(base)/tiles/vec/{z}/{x}/{y}"])
            #expect(tileJSON.json["vector_layers"] is [Any], "the rest of the stored TileJSON is kept")
            #expect(tileJSON.json["scheme"] as? String == "xyz")

            var checked = 0
            func expectServed(_ url: String, equals upstreamURL: String, type: String) throws {
                let bytes = try server.sendBytes("GET", target(url, server))
                #expect(bytes.status == 200, "\(url)")
                #expect(bytes.body == world.decoded(upstreamURL), "\(url) differs from \(upstreamURL)")
                #expect(bytes.header("Content-Type") == type, "\(url)")
                #expect(bytes.header("ETag") != nil, "\(url)")
                checked += 1
            }
            for z in 0...1 {
                for x in 0..<(1 << z) {
                    for y in 0..<(1 << z) {
                        let vector = "\(base)/tiles/vec/\(z)/\(x)/\(y)"
                        if world.noContent.contains("\(Self.upstream)/tiles/\(z)/\(x)/\(y).pbf") {
                            #expect(try server.send("GET", target(vector, server)).status == 204)
                        } else {
                            try expectServed(vector, equals: "\(Self.upstream)/tiles/\(z)/\(x)/\(y).pbf", type: "application/x-protobuf")
                        }
                        try expectServed("\(base)/tiles/sat/\(z)/\(x)/\(y)", equals: "\(Self.upstream)/sat/\(z)/\(x)/\(y).png", type: "image/png")
                    }
                }
            }
            try expectServed("\(base)/sources/places/data", equals: "\(Self.upstream)/places.geojson", type: "application/json")
            try expectServed("\(base)/sources/overlay/data", equals: "\(Self.upstream)/overlay.png", type: "image/png")
            for (index, upstreamBase) in [("\(Self.upstream)/sprites/base", ""), ("\(Self.upstream)/sprites/maki", "?v=2")].enumerated() {
                let spriteBase = try #require(sprites[index]["url"])
                for suffix in [".json", "@2x.json"] {
                    try expectServed(spriteBase + suffix, equals: upstreamBase.0 + suffix + upstreamBase.1, type: "application/json")
                }
                for suffix in [".png", "@2x.png"] {
                    try expectServed(spriteBase + suffix, equals: upstreamBase.0 + suffix + upstreamBase.1, type: "image/png")
                }
            }
            let glyphs = try #require(style["glyphs"] as? String)
            for start in [0, 256] {
                let url = glyphs.replacingOccurrences(of: "{fontstack}", with: "Noto%20Sans%20Regular,Arial%20Unicode%20MS%20Regular")
                    .replacingOccurrences(of: "{range}", with: "\(start)-\(start + 255)")
                try expectServed(url, equals: "\(Self.upstream)/fonts/Noto%20Sans%20Regular%2cArial%20Unicode%20MS%20Regular/\(start)-\(start + 255).pbf",
                                 type: "application/x-protobuf")
            }
            #expect(checked == 4 + 5 + 2 + 8 + 2, "every vector tile but the empty one, every raster tile, two data, eight sprite files, two glyph ranges")
        }
    }

    @Test func conditionalRequestsAnswer304() throws {
        try withPack { server, packID, _ in
            let style = try server.send("GET", "/v1/packs/\(packID)/style.json")
            let styleTag = try #require(style.header("ETag"))
            #expect(try server.send("GET", "/v1/packs/\(packID)/style.json", headers: ["If-None-Match": styleTag]).status == 304)

            let tile = try server.sendBytes("GET", "/v1/packs/\(packID)/tiles/vec/0/0/0")
            #expect(tile.header("ETag") == "\"t0-0-0\"", "the stored ETag is served")
            #expect(tile.header("Last-Modified") == nil)
            let revalidated = try server.send("GET", "/v1/packs/\(packID)/tiles/vec/0/0/0", headers: ["If-None-Match": "\"other\", \"t0-0-0\""])
            #expect(revalidated.status == 304)
            #expect(revalidated.header("ETag") == "\"t0-0-0\"")
            #expect(try server.send("GET", "/v1/packs/\(packID)/tiles/vec/0/0/0", headers: ["If-None-Match": "\"other\""]).status == 200)

            // A row stored without an ETag gets a synthetic one that revalidates too.
            let raster = try server.sendBytes("GET", "/v1/packs/\(packID)/tiles/sat/1/0/1")
            let rasterTag = try #require(raster.header("ETag"))
            #expect(try server.send("GET", "/v1/packs/\(packID)/tiles/sat/1/0/1", headers: ["If-None-Match": rasterTag]).status == 304)
            #expect(try server.sendBytes("GET", "/v1/packs/\(packID)/tiles/sat/1/1/1").header("ETag") != rasterTag)

            let geojson = try server.sendBytes("GET", "/v1/packs/\(packID)/sources/places/data")
            #expect(geojson.header("Last-Modified") == "Mon, 21 Sep 2026 14:13:20 GMT")
            #expect(try server.send("GET", "/v1/packs/\(packID)/sources/places/data",
                                    headers: ["If-Modified-Since": "Mon, 21 Sep 2026 14:13:20 GMT"]).status == 304)
            #expect(try server.send("GET", "/v1/packs/\(packID)/sources/places/data",
                                    headers: ["If-Modified-Since": "Mon, 21 Sep 2026 14:13:19 GMT"]).status == 200)
        }
    }

    @Test func gzipIsNegotiated() throws {
        try withPack { server, packID, world in
            for (x, y) in [(0, 0), (0, 1), (1, 1)] {
                let path = "/v1/packs/\(packID)/tiles/vec/1/\(x)/\(y)"
                let expected = try #require(world.decoded("\(Self.upstream)/tiles/1/\(x)/\(y).pbf"))
                let zipped = try server.sendBytes("GET", path, headers: ["Accept-Encoding": "br, gzip;q=0.8"])
                #expect(zipped.status == 200)
                #expect(zipped.header("Content-Encoding") == "gzip")
                #expect(zipped.header("Vary") == "Accept-Encoding")
                #expect(zipped.body.starts(with: [0x1F, 0x8B]))
                #expect(gunzip(zipped.body) == expected, "the gzip body inflates to the upstream's bytes")

                for header in [[:], ["Accept-Encoding": "gzip;q=0"], ["Accept-Encoding": "identity"], ["Accept-Encoding": "*;q=0.5, gzip;q=0"]] {
                    let plain = try server.sendBytes("GET", path, headers: header)
                    #expect(plain.header("Content-Encoding") == nil, "\(header)")
                    #expect(plain.body == expected, "\(header)")
                }
            }
            // Images are stored raw: never gzip-encoded, whatever the client accepts.
            let png = try server.sendBytes("GET", "/v1/packs/\(packID)/sprites/default/sprite.png", headers: ["Accept-Encoding": "gzip"])
            #expect(png.header("Content-Encoding") == nil)
            #expect(png.body.starts(with: Self.png))
        }
    }

    @Test func noContentAndOutsideThePack() throws {
        try withPack { server, packID, _ in
            let empty = try server.sendBytes("GET", "/v1/packs/\(packID)/tiles/vec/1/1/0")
            #expect(empty.status == 204)
            #expect(empty.body.isEmpty)
            // In the ambient cache but not linked to the pack: 404.
            #expect(try server.send("GET", "/v1/packs/\(packID)/tiles/vec/2/0/0").status == 404)
            for path in ["tiles/vec/3/1/1", "tiles/vec/1/2/0", "tiles/vec/31/0/0", "tiles/vec/1/-1/0", "tiles/vec/1/0/x",
                         "tiles/nope/0/0/0", "tiles/places/0/0/0", "sources/nope.json", "sources/vec", "sources/vec/data",
                         "sources/nope/data", "sprites/nope/sprite.json", "sprites/default/sprite.txt",
                         "glyphs/Noto%20Sans%20Regular/1-256.pbf", "glyphs/Noto%20Sans%20Regular/0-255.txt",
                         "glyphs/Noto%20Sans%20Regular/512-767.pbf", "glyphs/Other/0-255.pbf"] {
                let reply = try server.send("GET", "/v1/packs/\(packID)/\(path)")
                #expect(reply.status == 404, "\(path)")
                #expect(reply.header("Content-Type") == "application/problem+json", "\(path)")
            }
            #expect(try server.send("GET", "/v1/packs/999/style.json").status == 404)
            #expect(try server.send("GET", "/v1/packs/999/tiles/vec/0/0/0").status == 404)
            #expect(try server.send("GET", "/v1/packs/x/style.json").status == 404)

            // A tiles region has no style, but its one source is served.
            let created = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#)
            let tilesPack = try #require(created.json["id"] as? Int)
            #expect(try server.send("GET", "/v1/packs/\(tilesPack)/style.json").status == 404)
            let tileJSON = try server.send("GET", "/v1/packs/\(tilesPack)/sources/tiles.json")
            #expect(tileJSON.status == 200)
            #expect(tileJSON.json["tiles"] as? [String] == ["http://127.0.0.1/v1/packs/\(tilesPack)/tiles/tiles/{z}/{x}/{y}"])
            #expect(try server.send("GET", "/v1/packs/\(tilesPack)/tiles/tiles/0/0/0").status == 404, "nothing downloaded yet")
        }
    }

    /// Answers are cached for a few seconds, but not past a DELETE: a removed pack's style and
    /// tiles are gone the moment the removal is answered.
    @Test func aRemovedPackIsNotServedFromTheCache() throws {
        try withPack { server, packID, _ in
            let paths = ["style.json", "tiles/vec/0/0/0", "tiles/vec/1/1/0"]
            for path in paths + paths {
                let reply = try server.send("GET", "/v1/packs/\(packID)/\(path)")
                #expect(reply.status / 100 == 2, "\(path)")
            }
            #expect(try server.send("DELETE", "/v1/packs/\(packID)").status == 204)
            for path in paths {
                let reply = try server.send("GET", "/v1/packs/\(packID)/\(path)")
                #expect(reply.status == 404, "\(path)")
            }
        }
    }

    @Test func corsHeadersForBrowsers() throws {
        try withPack { server, packID, _ in
            for path in ["style.json", "sources/vec.json", "tiles/vec/0/0/0", "tiles/vec/1/1/0", "glyphs/Noto%20Sans%20Regular,Arial%20Unicode%20MS%20Regular/0-255.pbf",
                         "sprites/default/sprite.json", "sources/places/data", "tiles/vec/9/0/0"] {
                let reply = try server.sendBytes("GET", "/v1/packs/\(packID)/\(path)", headers: ["Origin": "https://viewer.example"])
                #expect(reply.header("Access-Control-Allow-Origin") == "*", "\(path)")
                #expect(reply.header("Access-Control-Expose-Headers")?.contains("ETag") == true, "\(path)")
            }
            // Preflights are the router's, outside openapi.yaml's operations: sent unrecorded.
            let preflight = try StreamClient(port: server.port)
            try preflight.send("OPTIONS /v1/packs/\(packID)/tiles/vec/0/0/0 HTTP/1.1\r\nHost: x\r\nOrigin: https://viewer.example\r\n"
                               + "Access-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: authorization\r\n\r\n")
            try preflight.readHead()
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Origin") == "*")
        }
    }

    @Test func configuredPublicURLIsTheBaseOfEveryURL() throws {
        let server = try RoutesFixture(publicURL: "https://maps.example.net/packd/")
        defer {
            server.stop()
            server.removeFiles()
        }
        let (packID, _) = try Self.storePack(in: server)
        let style = try server.send("GET", "/v1/packs/\(packID)/style.json", headers: ["Host": "ignored.example"])
        let sources = try #require(style.json["sources"] as? [String: [String: Any]])
        #expect(sources["vec"]?["url"] as? String == "https://maps.example.net/packd/v1/packs/\(packID)/sources/vec.json")
        #expect(style.json["glyphs"] as? String == "https://maps.example.net/packd/v1/packs/\(packID)/glyphs/{fontstack}/{range}.pbf")

        #expect(OfflineResourceRoutes.publicBaseURL("http://127.0.0.1:8080") == "http://127.0.0.1:8080")
        #expect(OfflineResourceRoutes.publicBaseURL("https://[::1]:8443/a/b//") == "https://[::1]:8443/a/b")
        for bad in ["ftp://host", "https://user@host", "https://host/?q=1", "https://host/#f", "https:///path", "https://ho st", "host:8080"] {
            #expect(OfflineResourceRoutes.publicBaseURL(bad) == nil, "\(bad)")
        }
    }

    @Test func accessTokenIsCarriedIntoTheRewrittenURLs() throws {
        try withPack(withKeys: true) { server, packID, _ in
            #expect(try server.send("GET", "/v1/packs/\(packID)/style.json").status == 401)
            #expect(try server.send("GET", "/v1/packs/\(packID)/tiles/vec/0/0/0").status == 401)
            #expect(try server.send("GET", "/v1/packs/\(packID)/tiles/vec/0/0/0?access_token=not-a-key-0123456789").status == 401)

            // With the header, the URLs carry no key: the client adds its own (transformRequest).
            let withHeader = try server.send("GET", "/v1/packs/\(packID)/style.json", headers: ["Authorization": "Bearer \(RoutesFixture.readKey)"])
            #expect(withHeader.status == 200)
            #expect(!withHeader.body.contains("access_token"))
            #expect(!withHeader.body.contains(RoutesFixture.readKey))

            let token = RoutesFixture.readKey
            let style = try server.send("GET", "/v1/packs/\(packID)/style.json?access_token=\(token)")
            #expect(style.status == 200)
            #expect(style.header("Cache-Control") == "private, no-store")
            let sources = try #require(style.json["sources"] as? [String: [String: Any]])
            let tileJSONURL = try #require(sources["vec"]?["url"] as? String)
            #expect(tileJSONURL.hasSuffix("/sources/vec.json?access_token=\(token)"))
            let tileJSON = try server.send("GET", target(tileJSONURL, server))
            #expect(tileJSON.status == 200)
            let template = try #require((tileJSON.json["tiles"] as? [String])?.first)
            #expect(template.hasSuffix("/tiles/vec/{z}/{x}/{y}?access_token=\(token)"))
            let tile = try server.send("GET", target(template.replacingOccurrences(of: "{z}/{x}/{y}", with: "0/0/0"), server))
            #expect(tile.status == 200)
            let sprite = try #require((style.json["sprite"] as? [[String: String]])?.first?["url"])
            // MapLibre puts its suffix into the path, before the query.
            let split = try #require(sprite.firstIndex(of: "?"))
            #expect(try server.send("GET", target(sprite[..<split] + "@2x.json" + sprite[split...], server)).status == 200)
        }
    }
}

extension RoutesFixture {
    struct ByteReply {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    /// One request whose body is read as bytes (tiles, images, gzip), on its own connection.
    func sendBytes(_ method: String, _ target: String, headers: [String: String] = [:]) throws -> ByteReply {
        let client = try StreamClient(port: port)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        try client.send(head + "\r\n")
        try client.readHead()
        let body = client.status == 304 || client.status == 204 || method == "HEAD" ? [] : try client.readBodyBytes()
        let reply = ByteReply(status: client.status, headers: client.headers, body: body)
        ResponseRecorder.record(method: method, target: target, status: reply.status, headers: reply.headers,
                                body: String(decoding: body, as: UTF8.self))
        return reply
    }

    /// Runs `operation` on the writer thread and waits for it.
    func writeNow(_ operation: @escaping @Sendable (OfflineDatabase) throws -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: Result<Void, any Error> = .success(())
        writer.perform(operation) { result in
            outcome = result
            done.signal()
        }
        done.wait()
        try outcome.get()
    }
}

/// The content of a gzip member, inflated by zlib itself (not by packd's codec).
func gunzip(_ bytes: [UInt8]) -> [UInt8]? {
    var stream = z_stream()
    guard inflateInit2_(&stream, 31, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
    defer { inflateEnd(&stream) }
    var input = bytes
    var output = [UInt8](repeating: 0, count: 1 << 20)
    let (status, produced) = input.withUnsafeMutableBufferPointer { source in
        output.withUnsafeMutableBufferPointer { target -> (Int32, Int) in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            stream.next_out = target.baseAddress
            stream.avail_out = uInt(target.count)
            return (inflate(&stream, Z_FINISH), target.count - Int(stream.avail_out))
        }
    }
    return status == Z_STREAM_END ? Array(output[0..<produced]) : nil
}
