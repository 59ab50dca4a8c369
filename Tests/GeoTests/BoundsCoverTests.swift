import Testing
@testable import Geo

@Suite struct BoundsCoverTests {
    @Test func worldCoversEveryTile() throws {
        for zoom in [0, 1, 5, 14, 22, 30] {
            let n = 1 << zoom
            #expect(TileCover(region: .bounds(.world), zoom: zoom).count == n * n)
        }
    }

    @Test func worldSumOverAllZoomsFitsInt() {
        // (4^31 - 1) / 3 tiles over z0-30.
        let expected = ((1 << 62) - 1) / 3
        #expect(WebMercator.tileCount(region: .bounds(.world), zooms: 0...30) == expected)
    }

    @Test func countMatchesIterationForSmallBoxes() throws {
        let boxes = [
            try LngLatBounds(west: -10, south: -10, east: 10, north: 10),
            try LngLatBounds(west: 170, south: -20, east: -170, north: 20),
            try LngLatBounds(west: 0, south: 0, east: 0, north: 0),
        ]
        for box in boxes {
            for zoom in 0...6 {
                let cover = TileCover(region: .bounds(box), zoom: zoom)
                let tiles = Array(cover)
                #expect(tiles.count == cover.count)
                #expect(Set(tiles).count == tiles.count)
            }
        }
    }
}
