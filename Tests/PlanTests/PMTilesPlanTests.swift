import Foundation
import Geo
import Testing
import TileFormats

@testable import Plan

@Suite struct PMTilesPlanTests {
    static let archive = "https://cdn.example.com/maps/world.pmtiles"
    static let key = "pmtiles+https://cdn.example.com/maps/world.pmtiles"

    private func region(_ text: String) throws -> RegionDefinition {
        try RegionDefinition(json: JSONSerialization.jsonObject(with: Data(text.utf8)))
    }

    private func problems(_ text: String) -> [String: String] {
        do {
            _ = try region(text)
            return [:]
        } catch let error as RegionError {
            return Dictionary(error.problems.map { ($0.pointer, $0.detail) }) { first, _ in first }
        } catch {
            return ["json": "\(error)"]
        }
    }

    static func header(minZoom: UInt8 = 0, maxZoom: UInt8 = 9, bounds: (Double, Double, Double, Double) = (-10, 40, 20, 60),
                       type: PMTilesHeader.TileType = .mvt) -> PMTilesHeader {
        var header = PMTilesHeader()
        header.minZoom = minZoom
        header.maxZoom = maxZoom
        header.tileType = type
        header.minLonE7 = Int32(bounds.0 * 1e7)
        header.minLatE7 = Int32(bounds.1 * 1e7)
        header.maxLonE7 = Int32(bounds.2 * 1e7)
        header.maxLatE7 = Int32(bounds.3 * 1e7)
        header.centerLonE7 = 50_000_000
        header.centerLatE7 = 500_000_000
        header.centerZoom = 4
        return header
    }

    @Test func keysAndTemplatesDeriveFromTheArchiveURLAlone() {
        #expect(PMTilesSourceURL.key(forArchive: Self.archive) == Self.key)
        #expect(PMTilesSourceURL.archiveURL(ofKey: Self.key) == Self.archive)
        #expect(PMTilesSourceURL.archiveURL(ofKey: "pmtiles+ftp://x/y") == nil)
        #expect(PMTilesSourceURL.archiveURL(ofKey: Self.archive) == nil)
        let template = PMTilesSourceURL.tileTemplate(forKey: Self.key)
        #expect(template == Self.key + "/{z}/{x}/{y}")
        #expect(PMTilesSourceURL.key(ofTemplate: template) == Self.key)
        #expect(PMTilesSourceURL.key(ofTemplate: "https://x/{z}/{x}/{y}") == nil)
    }

    @Test func archiveRegionsAreValidatedWithPointers() {
        #expect(problems(#"{"pmtiles": "\#(Self.archive)", "bounds": [-5, 40, 5, 50], "max_zoom": 6}"#).isEmpty)
        #expect(problems(#"{"pmtiles": "ftp://x/a.pmtiles", "bounds": [-5, 40, 5, 50]}"#)["/pmtiles"] != nil)
        #expect(problems(#"{"pmtiles": 3, "bounds": [-5, 40, 5, 50]}"#)["/pmtiles"] != nil)
        #expect(problems(#"{"pmtiles": "https://u:p@x/a.pmtiles", "bounds": [-5, 40, 5, 50]}"#)["/pmtiles"] != nil)
        #expect(problems(#"{"pmtiles": "https://x/{z}.pmtiles", "bounds": [-5, 40, 5, 50]}"#)["/pmtiles"] != nil)
        let both = problems(#"{"pmtiles": "\#(Self.archive)", "style_url": "https://x/s.json", "bounds": [-5, 40, 5, 50]}"#)
        #expect(both["/style_url"] != nil)
        #expect(problems(#"{"pmtiles": "\#(Self.archive)", "scheme": "tms", "bounds": [-5, 40, 5, 50]}"#)["/scheme"] != nil)
        #expect(problems(#"{"pmtiles": "\#(Self.archive)", "include_ideographs": true, "bounds": [-5, 40, 5, 50]}"#)["/include_ideographs"] != nil)
        #expect(problems(#"{"pmtiles": "\#(Self.archive)"}"#)[""] != nil)
    }

    @Test func anArchiveRegionRoundTripsThroughMapLibresDefinition() throws {
        let definition = try region(#"{"pmtiles": "\#(Self.archive)", "bounds": [170, -20, -170, -10], "min_zoom": 1, "max_zoom": 4}"#)
        #expect(definition.region.pmtiles == Self.archive)
        let stored = try JSONSerialization.jsonObject(with: Data(definition.mapLibreJSON.utf8))
        #expect(try RegionDefinition(mapLibreJSON: stored) == definition)
    }

    @Test func anArchiveRegionIsPlannedFromItsTileJSONWithTheArchivesZoomsAndBounds() throws {
        var builder = PlanBuilder(region: try region(#"{"pmtiles": "\#(Self.archive)", "bounds": [-30, 30, 30, 70], "min_zoom": 2}"#))
        #expect(!builder.plan.isPrecise)
        #expect(builder.plan.fixed.map(\.url) == [Self.key])
        #expect(builder.missingTileJSONURLs == [Self.key])
        let tileJSON = PMTilesTileJSON.document(header: Self.header(minZoom: 0, maxZoom: 6), metadata: [:], key: Self.key)
        try builder.addTileJSON(Data(tileJSON), url: Self.key)
        let plan = builder.plan
        #expect(plan.isPrecise)
        let pyramid = try #require(plan.pyramids.first)
        #expect(pyramid.zooms == Array(2...6), "max_zoom omitted: the archive's")
        #expect(pyramid.template.template == Self.key + "/{z}/{x}/{y}")
        // Clipped to the archive's bounds (-10…20, 40…60), as a TileJSON's bounds clip.
        let clipped = TileCover(region: .bounds(try LngLatBounds(west: -10, south: 40, east: 20, north: 60)), zoom: 6).count
        #expect(pyramid.tileCounts.last?.count == clipped)
        #expect(plan.expectedResources == 1 + plan.expectedTiles)
    }

    @Test func aStylesPMTilesSourceIsATileJSONUnderTheArchivesKey() throws {
        let style = #"""
            {"version": 8, "sources": {
               "a": {"type": "vector", "url": "pmtiles://\#(Self.archive)"},
               "b": {"type": "vector", "url": "pmtiles://tiles/local.pmtiles"},
               "c": {"type": "vector", "url": "\#(Self.key)"}},
             "layers": []}
            """#
        let document = try StyleDocument(style: Data(style.utf8), url: "https://styles.example.com/v1/style.json")
        let urls = document.tileSources.map { source -> String in
            guard case .tileJSON(let url) = source.tiles else { return "" }
            return url
        }
        #expect(urls == [Self.key, "pmtiles+https://styles.example.com/v1/tiles/local.pmtiles", Self.key])
        let bad = #"{"version": 8, "sources": {"a": {"type": "vector", "url": "pmtiles://https://x/{z}"}}, "layers": []}"#
        #expect(throws: PlanError.self) { try StyleDocument(style: Data(bad.utf8), url: "https://s/style.json") }
    }

    @Test func theStoredStyleNamesArchivesByKeySoMapLibreNativeReadsThemFromItsDatabase() throws {
        let style = #"""
            {"version": 8, "sources": {"a": {"type": "vector", "url": "pmtiles://\#(Self.archive)"},
             "o": {"type": "vector", "url": "https://x/tiles.json"}}, "layers": [{"id": "l", "type": "fill", "source": "a"}]}
            """#
        let stored = try #require(PMTilesSourceURL.storedStyle(Data(style.utf8), url: "https://s/style.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: stored) as? [String: Any])
        let sources = try #require(object["sources"] as? [String: [String: Any]])
        #expect(sources["a"]?["url"] as? String == Self.key)
        #expect(sources["o"]?["url"] as? String == "https://x/tiles.json")
        #expect((object["layers"] as? [Any])?.count == 1)
        // Parsed again, the stored style plans the same sources.
        let original = try StyleDocument(style: Data(style.utf8), url: "https://s/style.json")
        #expect(try StyleDocument(style: stored, url: "https://s/style.json") == original)
        #expect(PMTilesSourceURL.storedStyle(stored, url: "https://s/style.json") == nil, "nothing left to rewrite")
    }

    @Test func theTileJSONCarriesTheHeaderAndTheMetadatasLayers() throws {
        let metadata: [String: Any] = [
            "name": "World", "attribution": "© someone", "vector_layers": [["id": "water", "fields": [String: String]()]],
            "tilestats": ["huge": true], "version": 7,
        ]
        let bytes = PMTilesTileJSON.document(header: Self.header(type: .mlt), metadata: metadata, key: Self.key)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["tiles"] as? [String] == [Self.key + "/{z}/{x}/{y}"])
        #expect(object["minzoom"] as? Int == 0 && object["maxzoom"] as? Int == 9)
        #expect(object["bounds"] as? [Double] == [-10, 40, 20, 60])
        #expect(object["center"] as? [Double] == [5, 50, 4])
        #expect(object["name"] as? String == "World" && object["attribution"] as? String == "© someone")
        #expect((object["vector_layers"] as? [[String: Any]])?.first?["id"] as? String == "water")
        #expect(object["tilestats"] == nil && object["version"] == nil, "only TileJSON fields, only of the right type")
        #expect(object["encoding"] as? String == "mlt")
        #expect(PMTilesTileJSON.document(header: Self.header(type: .mlt), metadata: metadata, key: Self.key) == bytes)
        let tileset = try Tileset(tileJSON: Data(bytes), url: Self.key)
        #expect(tileset.zoomRange == 0...9)
        #expect(tileset.template.template == Self.key + "/{z}/{x}/{y}")
    }
}
