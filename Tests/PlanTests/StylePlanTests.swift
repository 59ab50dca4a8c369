import Foundation
import Geo
import Packs
import Testing

@testable import Plan

/// Plans for real styles, with totals worked out here from first principles.
@Suite struct StylePlanTests {
    private func region(_ text: String) throws -> RegionDefinition {
        try RegionDefinition(json: JSONSerialization.jsonObject(with: Data(text.utf8)))
    }

    /// Natural Earth fixture: a 512 px vector source (z0–6), a 256 px raster (z1–5), a GeoJSON
    /// URL, one sprite, two font stacks chosen by a `case` expression.
    @Test func naturalEarthFixtureStagesAndTotals() throws {
        let (west, south, east, north) = (-10.5, 35.3, 30.7, 60.2)
        var builder = PlanBuilder(region: try region("""
            {"style_url": "\(StyleFixtures.neBase)/style.json", "bounds": [\(west), \(south), \(east), \(north)],
             "min_zoom": 0, "max_zoom": 3.4, "include_ideographs": false}
            """))
        // Stage 1: only the style is known.
        #expect(builder.plan.fixed == [PlannedResource(kind: .style, url: "\(StyleFixtures.neBase)/style.json")])
        #expect(!builder.plan.isPrecise && builder.plan.expectedResources == 1)

        // Stage 2: the style names two TileJSONs.
        try builder.addStyle(Data(StyleFixtures.neStyle.utf8))
        #expect(builder.missingTileJSONURLs == ["\(StyleFixtures.neBase)/raster.json", "\(StyleFixtures.neBase)/tiles.json"])
        let fixedCount = 1 + 2 + 1 + 4 + 2 * 130  // style, TileJSONs, GeoJSON, sprite files, 2 stacks × 130 ranges
        #expect(builder.plan.fixed.count == fixedCount)
        #expect(!builder.plan.isPrecise && builder.plan.expectedResources == fixedCount)
        #expect(builder.style?.fontStacks == [["Noto Sans Bold"], ["Noto Sans Regular"]])

        // Stage 3: TileJSONs in; the plan is precise.
        try builder.addTileJSON(Data(StyleFixtures.neTileJSON.utf8), url: "\(StyleFixtures.neBase)/tiles.json")
        #expect(!builder.plan.isPrecise)
        try builder.addTileJSON(Data(StyleFixtures.neRasterJSON.utf8), url: "\(StyleFixtures.neBase)/raster.json")
        let plan = builder.plan
        #expect(plan.isPrecise && builder.missingTileJSONURLs.isEmpty)

        // Vector: floor(3.4) = 3 → z0–3. Raster 256 px: round(z + 1) → z1–4 (within its 1–5).
        let vectorTiles = TileMath.boxCount(west: west, south: south, east: east, north: north, zooms: 0...3)
        let rasterTiles = TileMath.boxCount(west: west, south: south, east: east, north: north, zooms: 1...4)
        #expect(plan.pyramids.map(\.sourceID) == ["ne", "relief"])
        #expect(plan.pyramids.map(\.zooms) == [[0, 1, 2, 3], [1, 2, 3, 4]])
        #expect(plan.expectedTiles == vectorTiles + rasterTiles)
        #expect(plan.expectedResources == fixedCount + vectorTiles + rasterTiles)
        let z2 = TileMath.boxCount(west: west, south: south, east: east, north: north, zoom: 2)
        #expect(plan.tileCounts.contains(TileCount(sourceID: "relief", zoom: 2, count: z2)))

        // Iteration: fixed first in kind order, then every tile once; length is the total.
        let resources = Array(plan)
        #expect(resources.count == plan.expectedResources)
        #expect(Set(resources.map(\.url)).count == resources.count)
        #expect(resources.prefix(8).map(\.kind.rawValue) == [1, 2, 2, 2, 5, 5, 6, 6])
        #expect(resources[8..<fixedCount].allSatisfy { $0.kind == .glyphs })
        #expect(resources[fixedCount...].allSatisfy { $0.kind == .tile && $0.tile != nil })
        let urls = Set(resources.map(\.url))
        #expect(urls.contains("\(StyleFixtures.neBase)/cities.geojson"))
        #expect(urls.isSuperset(of: ["sprite.png", "sprite@2x.png", "sprite.json", "sprite@2x.json"].map {
            "\(StyleFixtures.neBase)/\($0)"
        }))
        #expect(urls.contains("\(StyleFixtures.neBase)/fonts/Noto%20Sans%20Bold/0-255.pbf"))
        #expect(urls.contains("\(StyleFixtures.neBase)/fonts/Noto%20Sans%20Regular/65280-65535.pbf"))
        // 0x4E00 = 19968 starts a CJK range, skipped without ideographs.
        #expect(!urls.contains("\(StyleFixtures.neBase)/fonts/Noto%20Sans%20Bold/19968-20223.pbf"))
        let firstTile = try #require(resources[fixedCount].tile)
        #expect(firstTile.urlTemplate == "\(StyleFixtures.neBase)/tiles/{z}/{x}/{y}.pbf" && firstTile.z == 0)
        #expect(resources[fixedCount].url == "\(StyleFixtures.neBase)/tiles/0/0/0.pbf")
        let europeZ3 = resources.filter { $0.tile?.z == 3 && $0.tile?.urlTemplate.hasSuffix(".pbf") == true }
        let column = TileMath.column(longitude: 8.5, zoom: 3)
        let row = TileMath.row(latitude: 47.4, zoom: 3)
        #expect(europeZ3.contains { $0.url == "\(StyleFixtures.neBase)/tiles/3/\(column)/\(row).pbf" })
    }

    /// The MapLibre demo style: one vector TileJSON, inline GeoJSON (nothing to fetch), no sprite,
    /// one font stack; `max_zoom` omitted means the source's maxzoom.
    @Test func maplibreDemotiles() throws {
        let (west, south, east, north) = (-20.3, -35.7, 52.1, 38.2)
        var builder = PlanBuilder(region: try region("""
            {"style_url": "\(StyleFixtures.demotilesURL)", "bounds": [\(west), \(south), \(east), \(north)]}
            """))
        try builder.addStyle(Data(StyleFixtures.demotilesStyle.utf8))
        #expect(builder.missingTileJSONURLs == ["https://demotiles.maplibre.org/tiles/tiles.json"])
        try builder.addTileJSON(Data(StyleFixtures.demotilesTileJSON.utf8), url: "https://demotiles.maplibre.org/tiles/tiles.json")
        let plan = builder.plan
        #expect(builder.style?.geoJSONURLs == [] && builder.style?.spriteURLs == [])
        #expect(builder.style?.fontStacks == [["Open Sans Semibold"]])
        #expect(plan.fixed.count == 1 + 1 + 256)
        #expect(plan.fixed.filter { $0.kind == .glyphs }.last?.url
            == "https://demotiles.maplibre.org/font/Open%20Sans%20Semibold/65280-65535.pbf")
        #expect(plan.pyramids.map(\.zooms) == [Array(0...6)])
        let tiles = TileMath.boxCount(west: west, south: south, east: east, north: north, zooms: 0...6)
        #expect(plan.isPrecise && plan.expectedResources == 258 + tiles)
    }

    /// OSM Bright (OpenMapTiles schema): query strings with `{key}` kept, three font stacks,
    /// sprite at 1x and 2x, high-density tiles at z10–14.
    @Test func osmBright() throws {
        let (west, south, east, north) = (8.41, 47.31, 8.63, 47.44)
        var builder = PlanBuilder(region: try region("""
            {"style_url": "\(StyleFixtures.osmBrightURL)", "bounds": [\(west), \(south), \(east), \(north)],
             "min_zoom": 10, "max_zoom": 16, "pixel_ratio": 2}
            """))
        try builder.addStyle(Data(StyleFixtures.osmBrightStyle.utf8))
        #expect(builder.missingTileJSONURLs == [StyleFixtures.osmBrightTileJSONURL])
        try builder.addTileJSON(Data(StyleFixtures.osmBrightTileJSON.utf8), url: StyleFixtures.osmBrightTileJSONURL)
        let plan = builder.plan
        #expect(builder.style?.fontStacks == [["Noto Sans Bold"], ["Noto Sans Italic"], ["Noto Sans Regular"]])
        #expect(plan.fixed.count == 1 + 1 + 4 + 3 * 256)
        let fixedURLs = Set(plan.fixed.map(\.url))
        #expect(fixedURLs.contains("https://openmaptiles.github.io/osm-bright-gl-style/sprite@2x.json"))
        #expect(fixedURLs.contains("https://free.tilehosting.com/fonts/Noto%20Sans%20Italic/256-511.pbf?key={key}"))
        // Region z10–16 clamped to the TileJSON's maxzoom 14.
        #expect(plan.pyramids.map(\.zooms) == [Array(10...14)])
        let tiles = TileMath.boxCount(west: west, south: south, east: east, north: north, zooms: 10...14)
        #expect(plan.expectedTiles == tiles)
        let first = try #require(plan.pyramids.first?.resources.first { _ in true })
        let column = TileMath.column(longitude: west, zoom: 10)
        let row = TileMath.row(latitude: north, zoom: 10)
        #expect(first.url == "https://free.tilehosting.com/data/v3/10/\(column)/\(row).pbf.pict?key={key}")
        #expect(first.tile?.pixelRatio == 1)  // no {ratio} in the template
    }
}
