import Foundation
import Testing

@testable import Plan

@Suite struct StyleDocumentTests {
    private let styleURL = "https://maps.example.com/styles/basic/style.json"

    private func style(_ text: String, limits: PlanLimits = .init()) throws(PlanError) -> StyleDocument {
        try StyleDocument(style: Data(text.utf8), url: styleURL, limits: limits)
    }

    private func error(_ text: String, limits: PlanLimits = .init()) -> PlanError? {
        do {
            _ = try style(text, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func fontStacksInsideExpressionsAndFunctions() throws {
        let document = try style("""
            {"version": 8, "glyphs": "fonts/{fontstack}/{range}.pbf", "layers": [
              {"id": "a", "type": "symbol", "layout": {"text-field": "x",
                "text-font": ["match", ["get", "class"], "city", ["literal", ["City Bold", "Fallback"]],
                              ["town", "village"], ["literal", ["Town"]], ["literal", ["Other"]]]}},
              {"id": "b", "type": "symbol", "layout": {"text-field": "x",
                "text-font": ["step", ["zoom"], ["literal", ["Small"]], 10, ["literal", ["Large"]]]}},
              {"id": "c", "type": "symbol", "layout": {"text-field": "x",
                "text-font": ["coalesce", ["get", "font"], ["literal", ["Coalesced"]]]}},
              {"id": "d", "type": "symbol", "layout": {"text-field": "x",
                "text-font": {"stops": [[0, ["Stop Zero"]], [8, ["Stop Eight"]]]}}},
              {"id": "e", "type": "symbol", "layout": {"text-field": "x",
                "text-font": ["let", "f", 1, ["case", true, ["literal", ["Let Case"]], ["literal", ["Other"]]]]}},
              {"id": "f", "type": "symbol", "layout": {"text-field": "x"}},
              {"id": "g", "type": "symbol", "layout": {"icon-image": "dot", "text-font": ["Icon Only"]}},
              {"id": "h", "type": "line", "layout": {"text-field": "x", "text-font": ["Not Symbol"]}},
              {"id": "i", "type": "symbol", "layout": {"text-field": "x", "text-font": ["get", "font"]}}
            ]}
            """)
        #expect(Set(document.fontStacks) == [
            ["City Bold", "Fallback"], ["Town"], ["Other"], ["Small"], ["Large"], ["Coalesced"], ["Stop Zero"],
            ["Stop Eight"], ["Let Case"], ["Open Sans Regular", "Arial Unicode MS Regular"],
        ])
        #expect(document.glyphsTemplate == "https://maps.example.com/styles/basic/fonts/{fontstack}/{range}.pbf")
    }

    @Test func glyphRangesAndTheIdeographRule() {
        let all = GlyphRanges.starts(includeIdeographs: true)
        #expect(all.count == 256 && all.first == 0 && all.last == 65280)
        // Independently: ranges whose first code point is in U+4E00–U+9FFF or U+AC00–U+D7AF.
        let skipped = (0..<256).map { $0 * 256 }.filter { (0x4E00...0x9FFF).contains($0) || (0xAC00...0xD7AF).contains($0) }
        let without = GlyphRanges.starts(includeIdeographs: false)
        #expect(without.count == 130 && skipped.count == 126)
        #expect(Set(without).isDisjoint(with: skipped) && Set(without).union(skipped) == Set(all))
        #expect(
            GlyphRanges.url(
                template: "https://e.com/{fontstack}/{range}.pbf", fontStack: ["Open Sans Regular", "Arial Unicode MS Regular"],
                rangeStart: 512)
                == "https://e.com/Open%20Sans%20Regular%2cArial%20Unicode%20MS%20Regular/512-767.pbf")
        #expect(GlyphRanges.percentEncode("Noto Sans CJK 日本") == "Noto%20Sans%20CJK%20%e6%97%a5%e6%9c%ac")
    }

    /// A style MapLibre stored under `mapbox://` is read for its stored rows: its `mapbox://`
    /// references are kept verbatim (the keys MapLibre stored them under). A downloaded (http)
    /// style may still not refer to `mapbox://`.
    @Test func aStoredNonHTTPStyleKeepsItsReferencesAsStored() throws {
        let text = #"""
            {"version": 8, "sources": {"v": {"type": "vector", "url": "mapbox://mapbox.mapbox-streets-v8"},
              "r": {"type": "raster", "tiles": ["mapbox://tiles/mapbox.satellite/{z}/{x}/{y}.webp"]}},
             "sprite": "mapbox://sprites/mapbox/streets-v11", "glyphs": "mapbox://fonts/mapbox/{fontstack}/{range}.pbf",
             "layers": []}
            """#
        let stored = try StyleDocument(style: Data(text.utf8), url: "mapbox://styles/mapbox/streets-v11")
        #expect(stored.tileSources.map(\.id) == ["r", "v"])
        #expect(stored.tileSources[1].tiles == .tileJSON(url: "mapbox://mapbox.mapbox-streets-v8"))
        #expect(stored.spriteURLs == ["mapbox://sprites/mapbox/streets-v11"])
        #expect(stored.glyphsTemplate == "mapbox://fonts/mapbox/{fontstack}/{range}.pbf")
        guard case .inline(let raster) = stored.tileSources[0].tiles else { Issue.record("no inline tiles"); return }
        #expect(raster.template.template == "mapbox://tiles/mapbox.satellite/{z}/{x}/{y}.webp")

        #expect(error(text)?.code == .unsupportedURL)
    }

    @Test func sourcesSpritesAndRelativeURLs() throws {
        let document = try style("""
            {"version": 8,
             "sprite": [{"id": "default", "url": "../sprites/base?v=2"}, {"id": "extra", "url": "//cdn.example.com/extra"}],
             "sources": {
               "b-raster": {"type": "raster", "tiles": ["/tiles/{z}/{x}/{y}.png"], "tileSize": 256, "minzoom": 2, "maxzoom": 9,
                            "scheme": "tms", "bounds": [5, 45, 10, 48]},
               "a-vector": {"type": "vector", "url": "./tiles.json", "tileSize": 256},
               "dem": {"type": "raster-dem", "url": "https://dem.example.com/tiles.json"},
               "points": {"type": "geojson", "data": "data/points.geojson"},
               "inline": {"type": "geojson", "data": {"type": "FeatureCollection", "features": []}},
               "photo": {"type": "image", "url": "img/photo.png", "coordinates": [[0, 1], [1, 1], [1, 0], [0, 0]]},
               "film": {"type": "video", "urls": ["film.mp4"], "coordinates": [[0, 1], [1, 1], [1, 0], [0, 0]]},
               "custom": {"type": "something-new"}
             }, "layers": []}
            """)
        #expect(document.tileSources.map(\.id) == ["a-vector", "b-raster", "dem"])
        #expect(document.tileSources[0].tiles == .tileJSON(url: "https://maps.example.com/styles/basic/tiles.json"))
        #expect(document.tileSources[0].tileSize == 512)  // vector tiles are always 512 px in MapLibre
        guard case .inline(let tileset) = document.tileSources[1].tiles else {
            Issue.record("expected inline tiles")
            return
        }
        #expect(tileset.template.template == "https://maps.example.com/tiles/{z}/{x}/{y}.png")
        #expect(tileset.template.scheme == .tms && tileset.zoomRange == 2...9 && tileset.bounds?.west == 5)
        #expect(document.tileSources[1].tileSize == 256 && document.tileSources[2].tileSize == 512)
        #expect(document.geoJSONURLs == ["https://maps.example.com/styles/basic/data/points.geojson"])
        #expect(document.imageURLs == ["https://maps.example.com/styles/basic/img/photo.png"])
        #expect(document.spriteURLs == ["https://maps.example.com/styles/sprites/base?v=2", "https://cdn.example.com/extra"])
        #expect(SpriteFiles.resources(base: document.spriteURLs[0]).map(\.url) == [
            "https://maps.example.com/styles/sprites/base.png?v=2", "https://maps.example.com/styles/sprites/base@2x.png?v=2",
            "https://maps.example.com/styles/sprites/base.json?v=2", "https://maps.example.com/styles/sprites/base@2x.json?v=2",
        ])
    }

    @Test func errorsAUserCanActOn() {
        #expect(error("not json")?.code == .styleNotJSON)
        #expect(error("[8]")?.code == .styleNotJSON)
        #expect(error(#"{"version": 7}"#)?.code == .styleVersion)
        #expect(error(#"{"version": true}"#)?.code == .styleVersion)
        let noTiles = error(#"{"version": 8, "sources": {"osm": {"type": "vector"}}}"#)
        #expect(noTiles?.code == .sourceWithoutTiles && noTiles?.pointer == "/sources/osm" && noTiles?.url == styleURL)
        let mapbox = error(#"{"version": 8, "sources": {"m": {"type": "vector", "url": "mapbox://mapbox.streets"}}}"#)
        #expect(mapbox?.code == .unsupportedURL && mapbox?.pointer == "/sources/m/url")
        #expect(mapbox?.detail.contains("mapbox://") == true)
        #expect(error(#"{"version": 8, "sprite": "file:///etc/sprite"}"#)?.code == .unsupportedURL)
        let template = error(#"{"version": 8, "sources": {"r": {"type": "raster", "tiles": ["https://e.com/{z}/{x}.png"]}}}"#)
        #expect(template?.code == .templateWithoutCoordinates && template?.pointer == "/sources/r/tiles/0")
        #expect(error(#"{"version": 8, "sources": {"r": {"type": "raster", "tiles": []}}}"#)?.code == .tileJSONInvalid)
        #expect(error(#"{"version": 8, "sprite": 3}"#)?.pointer == "/sprite")
    }

    @Test func boundsOnHostileDocuments() {
        let limits = PlanLimits(maxDocumentBytes: 4_096, maxSources: 2, maxLayers: 3, maxFontStacks: 2, maxExpressionDepth: 4)
        let sources = (0..<3).map { #""s\#($0)": {"type": "geojson", "data": "d\#($0).json"}"# }.joined(separator: ",")
        #expect(error(#"{"version": 8, "sources": {\#(sources)}}"#, limits: limits)?.code == .documentTooLarge)
        #expect(error(#"{"version": 8, "layers": [{}, {}, {}, {}]}"#, limits: limits)?.code == .documentTooLarge)
        let stacks = (0..<3).map { #"{"type": "symbol", "layout": {"text-field": "x", "text-font": ["F\#($0)"]}}"# }
        #expect(error(#"{"version": 8, "layers": [\#(stacks.joined(separator: ","))]}"#, limits: limits)?.code == .documentTooLarge)
        var deep = #"["literal", ["Deep"]]"#
        for _ in 0..<6 { deep = #"["coalesce", \#(deep)]"# }
        let deepStyle = #"{"version": 8, "layers": [{"type": "symbol", "layout": {"text-field": "x", "text-font": \#(deep)}}]}"#
        #expect(error(deepStyle, limits: limits)?.code == .styleInvalid)
        #expect(error(String(repeating: " ", count: 5_000) + "{}", limits: limits)?.code == .documentTooLarge)
    }
}
