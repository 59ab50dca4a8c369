import Foundation
import PackdTestSupport
import Packs
import Store
import Testing
@testable import API

/// The offline documents packd serves say where the pack ends: each tile source's `maxzoom` is the
/// deepest zoom the pack holds of it — its covering zoom for the source's tile size, as the
/// download planned it — so MapLibre overzooms the stored tiles past it instead of asking packd
/// for tiles it cannot have. Exports keep the upstream's documents byte for byte.
@Suite struct OfflineDocumentZoomTests {
    static let upstream = "https://maps.example.org"
    static let style = """
        {"version": 8, "name": "zooms",
         "sources": {
           "vec": {"type": "vector", "url": "\(upstream)/vec.json"},
           "sat": {"type": "raster", "tiles": ["\(upstream)/sat/{z}/{x}/{y}.png"], "tileSize": 256, "maxzoom": 18},
           "hd": {"type": "raster", "tiles": ["\(upstream)/hd/{z}/{x}/{y}.png"], "tileSize": 512},
           "dem": {"type": "raster-dem", "url": "\(upstream)/dem.json", "tileSize": 256},
           "shallow": {"type": "vector", "url": "\(upstream)/shallow.json"}
         },
         "layers": [{"id": "bg", "type": "background", "paint": {"background-color": "#a0c8f0"}}]}
        """
    static let tileJSONs = [
        "vec": #"{"tilejson": "3.0.0", "tiles": ["\#(upstream)/vec/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 14}"#,
        "dem": #"{"tilejson": "3.0.0", "tiles": ["\#(upstream)/dem/{z}/{x}/{y}.png"], "maxzoom": 12}"#,
        // Shallower than the pack: kept.
        "shallow": #"{"tilejson": "3.0.0", "tiles": ["\#(upstream)/shallow/{z}/{x}/{y}.pbf"], "maxzoom": 2}"#,
    ]

    /// A z0–3 pack whose documents are stored (its tiles are not needed to serve the documents).
    static func storePack(in server: RoutesFixture) throws -> Int {
        let created = try server.send("POST", "/v1/packs", json: """
            {"region": {"style_url": "\(upstream)/style.json", "bounds": [-10, 40, 10, 55], "min_zoom": 0, "max_zoom": 3}, "start": false}
            """)
        let packID = try #require(created.json["id"] as? Int, "\(created.body)")
        var writes = [ResourceWrite(key: .resource(url: "\(upstream)/style.json", kind: .style),
                                    content: .body(try StoredBody.encoding(Array(style.utf8))), packID: Int64(packID))]
        for (id, document) in tileJSONs {
            writes.append(ResourceWrite(key: .resource(url: "\(upstream)/\(id).json", kind: .source),
                                        content: .body(try StoredBody.encoding(Array(document.utf8))), packID: Int64(packID)))
        }
        let batch = writes
        try server.writeNow { database in
            if let error = database.apply(batch, now: 1_790_000_000).error { throw error }
        }
        return packID
    }

    static func maxZoom(_ document: [String: Any], source: String? = nil) -> Int? {
        let object = source.map { ((document["sources"] as? [String: Any])?[$0] as? [String: Any]) ?? [:] } ?? document
        return object["maxzoom"] as? Int
    }

    @Test func eachSourceEndsAtTheDeepestZoomThePackHolds() throws {
        let server = try RoutesFixture()
        defer {
            server.stop()
            server.removeFiles()
        }
        let pack = try Self.storePack(in: server)
        let style = try server.send("GET", "/v1/packs/\(pack)/style.json").json
        // Inline tiles: in the style. 256 px raster tiles are covered one zoom deeper than the
        // map's (MapLibre's covering zoom), 512 px ones at the map's.
        #expect(Self.maxZoom(style, source: "sat") == 4)
        #expect(Self.maxZoom(style, source: "hd") == 3)
        // A TileJSON source's `maxzoom` is its TileJSON's: the style's source is left as it was.
        #expect(Self.maxZoom(style, source: "vec") == nil)
        var served: [String: Int?] = [:]
        for id in ["vec", "sat", "hd", "dem", "shallow"] {
            let reply = try server.send("GET", "/v1/packs/\(pack)/sources/\(id).json")
            #expect(reply.status == 200, "\(id): \(reply.body)")
            served[id] = Self.maxZoom(reply.json)
        }
        // Vector tiles are 512 px; raster-dem's 256 px are floored, not rounded, one zoom deeper.
        #expect(served == ["vec": 3, "sat": 4, "hd": 3, "dem": 4, "shallow": 2], "\(served)")

        // A tiles region's TileJSON ends at the region's deepest zoom.
        let tiles = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion(maxZoom: 5)), "start": false}"#)
        let tilesID = try #require(tiles.json["id"] as? Int)
        #expect(Self.maxZoom(try server.send("GET", "/v1/packs/\(tilesID)/sources/tiles.json").json) == 5)
    }

    /// Devices match the documents of an export by their URLs: an export holds them as the
    /// upstream sent them, not as packd serves them.
    @Test func exportsKeepTheUpstreamDocuments() throws {
        let server = try RoutesFixture()
        defer {
            server.stop()
            server.removeFiles()
        }
        let pack = try Self.storePack(in: server)
        #expect(try server.send("GET", "/v1/packs/\(pack)/sources/vec.json").status == 200)
        let export = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/export?format=maplibre&partial=true")
        #expect(export.status == 200)
        let file = server.directory.appendingPathComponent("zooms-export.db").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data(export.body)))
        let database = try Database(path: file, mode: .readOnly)
        var stored: [String: [UInt8]] = [:]
        try database.makeStatement("SELECT url, data, compressed FROM resources").forEachRow { row in
            guard let url = row.string(at: 0), let data = row.blob(at: 1) else { return }
            stored[url] = try StoredBody(data: data, compressed: row.int64(at: 2) != 0).decoded()
        }
        #expect(stored["\(Self.upstream)/style.json"] == Array(Self.style.utf8))
        for (id, document) in Self.tileJSONs {
            #expect(stored["\(Self.upstream)/\(id).json"] == Array(document.utf8), "\(id)")
        }
    }
}
