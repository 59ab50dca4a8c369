import Testing
@testable import Geo

@Suite struct TileIDTests {
    @Test func quadkeyMatchesBingExamples() {
        // From Microsoft's "Bing Maps Tile System" article: tile (3, 5) at level 3 is "213".
        #expect(TileID(z: 3, x: 3, y: 5).quadkey == "213")
        #expect(TileID(z: 0, x: 0, y: 0).quadkey == "")
        #expect(TileID(z: 1, x: 1, y: 1).quadkey == "3")
        #expect(TileID(z: 2, x: 0, y: 3).quadkey == "22")
    }

    @Test func flippedYIsTheTMSRowAndAnInvolution() {
        let tile = TileID(z: 14, x: 8800, y: 5373)
        #expect(tile.flippedY() == TileID(z: 14, x: 8800, y: 16383 - 5373))
        #expect(tile.flippedY().flippedY() == tile)
        #expect(TileID(z: 0, x: 0, y: 0).flippedY() == TileID(z: 0, x: 0, y: 0))
    }

    @Test func epsg3857BoundsOfKnownTiles() {
        let world = TileID(z: 0, x: 0, y: 0).epsg3857Bounds
        let extent = 20_037_508.342789244
        #expect(abs(world.minX + extent) < 1e-6 && abs(world.maxX - extent) < 1e-6)
        #expect(abs(world.minY + extent) < 1e-6 && abs(world.maxY - extent) < 1e-6)
        let northEast = TileID(z: 1, x: 1, y: 0).epsg3857Bounds
        #expect(northEast.minX == 0 && northEast.minY == 0)
        #expect(abs(northEast.maxX - extent) < 1e-6 && abs(northEast.maxY - extent) < 1e-6)
    }

    @Test func orderIsZoomRowColumn() {
        let sorted = [TileID(z: 1, x: 0, y: 0), TileID(z: 0, x: 0, y: 0), TileID(z: 1, x: 1, y: 0), TileID(z: 1, x: 0, y: 1)].sorted()
        #expect(sorted == [TileID(z: 0, x: 0, y: 0), TileID(z: 1, x: 0, y: 0), TileID(z: 1, x: 1, y: 0), TileID(z: 1, x: 0, y: 1)])
    }

    @Test func projectionAnchors() {
        let origin = WebMercator.project(lngLat(0, 0))
        #expect(origin.x == 0.5 && origin.y == 0.5)
        #expect(WebMercator.project(lngLat(-180, 90)) == (0, 0))
        #expect(WebMercator.project(lngLat(180, -90)) == (1, 1))
        // The clamp latitude is the square map's edge.
        #expect(abs(WebMercator.project(lngLat(0, WebMercator.maxLatitude)).y) < 1e-15)
    }
}
