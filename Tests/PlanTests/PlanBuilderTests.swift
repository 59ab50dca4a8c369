import Foundation
import Geo
import Testing

@testable import Plan

@Suite struct PlanBuilderTests {
    private func region(_ text: String) throws -> RegionDefinition {
        try RegionDefinition(json: JSONSerialization.jsonObject(with: Data(text.utf8)))
    }

    @Test func templateRegionIsCompleteFromTheRegionAlone() throws {
        let (west, south, east, north) = (-3.3, 50.1, 1.7, 53.9)
        let builder = PlanBuilder(region: try region("""
            {"tiles": ["https://{s}.tile.example.org/{z}/{x}/{y}{ratio}.png"], "subdomains": ["a", "b", "c"],
             "scheme": "tms", "bounds": [\(west), \(south), \(east), \(north)], "min_zoom": 2, "max_zoom": 7.9,
             "pixel_ratio": 2}
            """))
        let plan = builder.plan
        #expect(plan.isPrecise && plan.fixed.isEmpty)
        #expect(plan.pyramids.map(\.sourceID) == [PlanBuilder.templateSourceID])
        #expect(plan.pyramids.map(\.zooms) == [Array(2...7)])
        let expected = TileMath.boxCount(west: west, south: south, east: east, north: north, zooms: 2...7)
        #expect(plan.expectedResources == expected)

        var count = 0
        for resource in plan {
            let tile = try #require(resource.tile)
            count += 1
            let host = ["a", "b", "c"][(tile.x + tile.y) % 3]
            let tmsRow = (1 << tile.z) - 1 - tile.y
            #expect(resource.url == "https://\(host).tile.example.org/\(tile.z)/\(tile.x)/\(tmsRow)@2x.png")
            #expect(tile.pixelRatio == 2 && tile.urlTemplate == "https://{s}.tile.example.org/{z}/{x}/{y}{ratio}.png")
        }
        #expect(count == expected)
    }

    @Test func geometryRegionCountsMatchItsCover() throws {
        let builder = PlanBuilder(region: try region("""
            {"tiles": ["https://e.com/{z}/{x}/{y}.png"], "min_zoom": 4, "max_zoom": 9,
             "geometry": {"type": "Polygon", "coordinates": [[[5.9, 45.8], [10.5, 45.8], [10.5, 47.8], [5.9, 45.8]]]}}
            """))
        let plan = builder.plan
        let counts = plan.tileCounts
        #expect(counts.map(\.zoom) == Array(4...9))
        #expect(plan.expectedTiles == counts.reduce(0) { $0 + $1.count })
        #expect(Array(plan).count == plan.expectedTiles)
        // A triangle covers fewer tiles than its bounding box at z9.
        let box = TileMath.boxCount(west: 5.9, south: 45.8, east: 10.5, north: 47.8, zoom: 9)
        #expect(counts.last.map { $0.count < box && $0.count > box / 4 } == true)
    }

    @Test func coveringZoomFollowsTileSizeAndSourceType() {
        // 256 px raster: one zoom deeper, rounded; raster-dem floors; 1024 px one shallower.
        #expect(TilePyramid.coveringZooms(minZoom: 0, maxZoom: 6, kind: .raster, tileSize: 256, sourceRange: 0...22) == Array(1...7))
        #expect(TilePyramid.coveringZooms(minZoom: 2.5, maxZoom: 6.5, kind: .raster, tileSize: 512, sourceRange: 0...22) == Array(3...7))
        #expect(TilePyramid.coveringZooms(minZoom: 2.5, maxZoom: 6.5, kind: .rasterDEM, tileSize: 512, sourceRange: 0...22) == Array(2...6))
        #expect(TilePyramid.coveringZooms(minZoom: 0, maxZoom: 4, kind: .raster, tileSize: 1024, sourceRange: 0...22) == Array(0...3))
        #expect(TilePyramid.coveringZooms(minZoom: 3, maxZoom: nil, kind: .vector, tileSize: 512, sourceRange: 0...14) == Array(3...14))
        #expect(TilePyramid.coveringZooms(minZoom: 15, maxZoom: 16, kind: .vector, tileSize: 512, sourceRange: 0...14) == [])
    }

    @Test func sourcesSharingATemplateShareTiles() throws {
        var builder = PlanBuilder(region: try region("""
            {"style_url": "https://e.com/style.json", "bounds": [1.1, 2.2, 3.3, 4.4], "min_zoom": 0, "max_zoom": 10}
            """))
        try builder.addStyle(Data("""
            {"version": 8, "sources": {
              "low": {"type": "vector", "tiles": ["https://e.com/t/{z}/{x}/{y}.pbf"], "maxzoom": 4},
              "high": {"type": "vector", "tiles": ["https://e.com/t/{z}/{x}/{y}.pbf"], "minzoom": 3, "maxzoom": 6}
            }}
            """.utf8))
        let plan = builder.plan
        #expect(plan.isPrecise && plan.pyramids.count == 1 && plan.pyramids[0].zooms == Array(0...6))
        let resources = Array(plan)
        #expect(Set(resources.map(\.url)).count == resources.count && resources.count == plan.expectedResources)
    }

    /// Two sources over one template with different TileJSON bounds store into the same rows:
    /// the plan must count each tile once, or the pack's expected count is never reached.
    @Test func sharedTemplateWithDifferentBoundsCountsEachTileOnce() throws {
        var builder = PlanBuilder(region: try region("""
            {"style_url": "https://e.com/style.json", "bounds": [-30.5, -20.5, 30.5, 20.5], "min_zoom": 6, "max_zoom": 6}
            """))
        try builder.addStyle(Data("""
            {"version": 8, "sources": {
              "a": {"type": "vector", "tiles": ["https://e.com/{z}/{x}/{y}"], "bounds": [0.3, 0.3, 10.7, 10.7]},
              "b": {"type": "vector", "tiles": ["https://e.com/{z}/{x}/{y}"], "bounds": [5.3, -5.7, 20.7, 8.7]}
            }}
            """.utf8))
        let plan = builder.plan
        #expect(plan.pyramids.count == 1)
        let resources = Array(plan)
        #expect(Set(resources.map(\.url)).count == resources.count && resources.count == plan.expectedResources)
        // Every tile either source needs is in the plan (the enclosing box may add a few more).
        let union = TileMath.boxCount(west: 0.3, south: -5.7, east: 20.7, north: 10.7, zoom: 6)
        #expect(plan.expectedTiles == union)
        #expect(PlanBuilder.enclosingClip(nil, try LngLatBounds(west: 0, south: 0, east: 1, north: 1)) == nil)
        let crossing = try LngLatBounds(west: 170, south: 0, east: -170, north: 1)
        #expect(PlanBuilder.enclosingClip(crossing, try LngLatBounds(west: 0, south: 0, east: 1, north: 1)) == nil)
    }

    @Test func countsSaturateInsteadOfTrapping() throws {
        var builder = PlanBuilder(region: try region("""
            {"style_url": "https://e.com/style.json", "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 30}
            """))
        let sources = (0..<8).map { #""s\#($0)": {"type": "vector", "tiles": ["https://e\#($0).com/{z}/{x}/{y}"], "maxzoom": 30}"# }
        try builder.addStyle(Data(#"{"version": 8, "sources": {\#(sources.joined(separator: ","))}}"#.utf8))
        let plan = builder.plan
        // One world pyramid to z30 holds about (4^31 - 1) / 3 ≈ 1.5e18 tiles; eight exceed Int64.
        #expect(plan.pyramids[0].tileCount > 1_000_000_000_000_000_000)
        #expect(plan.expectedTiles == .max && plan.expectedResources == .max)
    }

    @Test func tileJSONStageErrors() throws {
        var builder = PlanBuilder(region: try region("""
            {"style_url": "https://e.com/style.json", "bounds": [1, 2, 3, 4], "max_zoom": 5}
            """))
        #expect(throws: PlanError.self) { try builder.addTileJSON(Data("{}".utf8), url: "https://e.com/other.json") }
        try builder.addStyle(Data(#"{"version": 8, "sources": {"v": {"type": "vector", "url": "tiles.json"}}}"#.utf8))
        let url = "https://e.com/tiles.json"
        #expect(builder.missingTileJSONURLs == [url])
        let cases: [(String, PlanError.Code)] = [
            ("nope", .tileJSONInvalid),
            (#"{"tiles": ["https://e.com/{z}/{x}/{y}"], "minzoom": 9, "maxzoom": 3}"#, .tileJSONInvalid),
            (#"{"tiles": ["https://e.com/{z}/{x}/{y}"], "bounds": [0, 10, 1]}"#, .tileJSONInvalid),
            (#"{"tiles": ["https://e.com/{z}/{x}/{y}"], "maxzoom": "high"}"#, .tileJSONInvalid),
            (#"{"tiles": ["gopher://e.com/{z}/{x}/{y}"]}"#, .unsupportedURL),
            (#"{"name": "no tiles"}"#, .sourceWithoutTiles),
        ]
        for (document, code) in cases {
            do {
                try builder.addTileJSON(Data(document.utf8), url: url)
                Issue.record("accepted \(document)")
            } catch {
                #expect(error.code == code && error.url == url, "\(document)")
            }
        }
        #expect(!builder.plan.isPrecise)
        // Relative tile URLs resolve against the TileJSON's own URL.
        try builder.addTileJSON(Data(#"{"tiles": ["t/{z}/{x}/{y}.pbf"], "maxzoom": 3}"#.utf8), url: url)
        #expect(builder.plan.isPrecise && builder.plan.pyramids.first?.template.template == "https://e.com/t/{z}/{x}/{y}.pbf")
        #expect(builder.plan.pyramids.first?.zooms == Array(0...3))
    }

    @Test func tileJSONBoundsClipTheCover() throws {
        var builder = PlanBuilder(region: try region("""
            {"style_url": "https://e.com/style.json", "bounds": [-30.5, -20.5, 30.5, 20.5], "min_zoom": 6, "max_zoom": 6}
            """))
        try builder.addStyle(Data("""
            {"version": 8, "sources": {"v": {"type": "vector", "tiles": ["https://e.com/{z}/{x}/{y}"],
             "bounds": [0.3, 0.3, 10.7, 10.7]}}}
            """.utf8))
        let clipped = TileMath.boxCount(west: 0.3, south: 0.3, east: 10.7, north: 10.7, zoom: 6)
        #expect(builder.plan.expectedTiles == clipped)
    }

    /// Estimates must be computed, not enumerated: the world to z22 is ~2.3e13 tiles.
    @Test func worldCountsAreComputed() throws {
        let builder = PlanBuilder(region: try region("""
            {"tiles": ["https://e.com/{z}/{x}/{y}.png"], "bounds": [-180, -90, 180, 90], "min_zoom": 0, "max_zoom": 22}
            """))
        let expected = (0...22).reduce(0) { $0 + (1 << (2 * $1)) }
        #expect(builder.plan.expectedTiles == expected && builder.plan.expectedResources == expected)
        #expect(builder.plan.tileCounts.last == TileCount(sourceID: "tiles", zoom: 22, count: 1 << 44))
    }
}
