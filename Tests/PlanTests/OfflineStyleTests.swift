import Foundation
import Geo
import Testing
@testable import Plan

/// `OfflineStyle`: the stored URL behind every offline URL is exactly the key the download
/// stored, and the rewritten style points only at packd.
@Suite struct OfflineStyleTests {
    static let styleURL = "https://maps.example.org/styles/basic/style.json"
    static let links = OfflineLinks(packBase: "http://packd.test:8080/v1/packs/7", query: "?access_token=k")

    static let style = """
        {"version": 8, "name": "kept",
         "sources": {
           "vec": {"type": "vector", "url": "../../tiles.json"},
           "tms": {"type": "raster", "tiles": ["https://t.example.org/{z}/{x}/{y}.png"], "scheme": "tms", "tileSize": 256},
           "places one": {"type": "geojson", "data": "data/places.geojson", "cluster": true},
           "inline": {"type": "geojson", "data": {"type": "FeatureCollection", "features": []}},
           "photo": {"type": "image", "url": "/img/photo.png", "coordinates": [[0, 1], [1, 1], [1, 0], [0, 0]]},
           "clip": {"type": "video", "urls": ["https://v.example.org/a.mp4"], "coordinates": [[0, 1], [1, 1], [1, 0], [0, 0]]}
         },
         "sprite": [{"id": "base", "url": "https://maps.example.org/sprites/base?v=3"}, {"id": "a/b", "url": "sprites/ab"}],
         "glyphs": "https://fonts.example.org/{fontstack}/{range}.pbf",
         "layers": [{"id": "l", "type": "symbol", "source": "vec", "source-layer": "x",
                     "layout": {"text-field": "a", "text-font": ["Noto Sans Regular", "Arial Unicode MS Regular"]}}]}
        """

    func parsed() throws -> OfflineStyle {
        try OfflineStyle(style: Data(Self.style.utf8), url: Self.styleURL)
    }

    @Test func sourcesSpritesAndGlyphsLeadToTheStoredURLs() throws {
        let style = try parsed()
        #expect(style.sources["vec"] == .tileJSON(url: "https://maps.example.org/tiles.json"))
        guard case .inline(let tileset)? = style.sources["tms"] else { Issue.record("tms is inline"); return }
        #expect(tileset.template.template == "https://t.example.org/{z}/{x}/{y}.png")
        #expect(style.sources["places one"] == .data(url: "https://maps.example.org/styles/basic/data/places.geojson"))
        #expect(style.sources["photo"] == .data(url: "https://maps.example.org/img/photo.png"))
        #expect(style.sources["inline"] == nil, "inline GeoJSON has nothing stored")
        #expect(style.sources["clip"] == nil, "video is not stored offline")

        #expect(style.spriteURL(id: "base", file: "sprite@2x.png") == "https://maps.example.org/sprites/base@2x.png?v=3")
        #expect(style.spriteURL(id: "a/b", file: "sprite.json") == "https://maps.example.org/styles/basic/sprites/ab.json")
        #expect(style.spriteURL(id: "base", file: "sprite.txt") == nil)
        #expect(style.spriteURL(id: "other", file: "sprite.json") == nil)

        // The download's plan holds exactly these URLs: serving finds what downloading stored.
        var builder = PlanBuilder(region: RegionDefinition(content: .style(url: Self.styleURL),
                                                           area: .bounds(try LngLatBounds(west: -1, south: -1, east: 1, north: 1)),
                                                           minZoom: 0, maxZoom: 1))
        try builder.addStyle(Data(Self.style.utf8))
        let planned = Set(builder.plan.fixed.map(\.url))
        let glyphs = try #require(style.glyphsURL(fontStack: "Noto Sans Regular,Arial Unicode MS Regular", rangeStart: 256))
        #expect(planned.contains(glyphs), "\(glyphs)")
        for (id, file) in [("base", "sprite.json"), ("base", "sprite@2x.png"), ("a/b", "sprite.png"), ("a/b", "sprite@2x.json")] {
            let url = try #require(style.spriteURL(id: id, file: file))
            #expect(planned.contains(url), "\(url)")
        }
        for case .data(let url) in style.sources.values { #expect(planned.contains(url), "\(url)") }
    }

    @Test func rewrittenStylePointsOnlyAtPackd() throws {
        let data = try parsed().rewritten(Self.links)
        let text = String(decoding: data, as: UTF8.self)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let sources = try #require(object["sources"] as? [String: [String: Any]])
        let base = "http://packd.test:8080/v1/packs/7"
        #expect(sources["vec"]?["url"] as? String == "\(base)/sources/vec.json?access_token=k")
        #expect(sources["tms"]?["tiles"] as? [String] == ["\(base)/tiles/tms/{z}/{x}/{y}?access_token=k"])
        #expect(sources["tms"]?["scheme"] as? String == "xyz", "packd serves XYZ whatever the upstream used")
        #expect(sources["places one"]?["data"] as? String == "\(base)/sources/places%20one/data?access_token=k")
        #expect(sources["places one"]?["cluster"] as? Bool == true, "other source fields are kept")
        #expect(sources["photo"]?["url"] as? String == "\(base)/sources/photo/data?access_token=k")
        #expect(sources["inline"]?["data"] is [String: Any])
        #expect((object["sprite"] as? [[String: String]])?.map { $0["url"] } == ["\(base)/sprites/base/sprite?access_token=k",
                                                                                  "\(base)/sprites/a%2fb/sprite?access_token=k"])
        #expect(object["glyphs"] as? String == "\(base)/glyphs/{fontstack}/{range}.pbf?access_token=k")
        #expect(object["name"] as? String == "kept")
        #expect((object["layers"] as? [Any])?.count == 1)
        for upstream in ["maps.example.org", "t.example.org", "fonts.example.org"] { #expect(!text.contains(upstream), "\(upstream)") }
    }

    @Test func singleSpriteIsTheDefaultID() throws {
        let style = try OfflineStyle(style: Data(#"{"version": 8, "sources": {}, "sprite": "https://s.example.org/sprite", "layers": []}"#.utf8),
                                     url: Self.styleURL)
        #expect(style.sprites == ["default": "https://s.example.org/sprite"])
        let object = try #require(try JSONSerialization.jsonObject(with: style.rewritten(OfflineLinks(packBase: "http://h/v1/packs/1"))) as? [String: Any])
        #expect(object["sprite"] as? String == "http://h/v1/packs/1/sprites/default/sprite")
        #expect(object["glyphs"] == nil, "no glyphs are added to a style without them")
    }

    @Test func tileJSONIsRewrittenOrSynthesised() throws {
        let tileset = Tileset(template: try TileURLTemplate("https://t.example.org/{z}/{x}/{y}.pbf"), zoomRange: 2...9,
                              bounds: try LngLatBounds(west: -10, south: -5, east: 10, north: 5))
        let stored = Data(#"{"tilejson": "2.2.0", "tiles": ["https://t.example.org/{z}/{x}/{y}.pbf"], "scheme": "tms", "attribution": "©"}"#.utf8)
        let rewritten = try #require(try JSONSerialization.jsonObject(with: OfflineTileJSON.rewritten(stored, tileset: tileset, tilesURL: "T")) as? [String: Any])
        #expect(rewritten["tiles"] as? [String] == ["T"])
        #expect(rewritten["scheme"] as? String == "xyz")
        #expect(rewritten["attribution"] as? String == "©")
        let synthesised = try #require(try JSONSerialization.jsonObject(with: OfflineTileJSON.rewritten(nil, tileset: tileset, tilesURL: "T")) as? [String: Any])
        #expect(synthesised["minzoom"] as? Int == 2)
        #expect(synthesised["maxzoom"] as? Int == 9)
        #expect(synthesised["bounds"] as? [Double] == [-10, -5, 10, 5])
        #expect(synthesised["tiles"] as? [String] == ["T"])
    }
}
