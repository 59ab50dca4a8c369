import Geo
@testable import Jobs
import Plan
import Store
import Testing
import WorkSharing

/// The band cutter decides which tiles are looked up and fetched: every tile exactly once, in
/// cover order, each band within its tile and window bounds.
@Suite struct TileBandsTests {
    static func pyramid(zooms: [Int], bounds: LngLatBounds) throws -> TilePyramid {
        TilePyramid(sourceID: "t", template: try TileURLTemplate("http://127.0.0.1/{z}/{x}/{y}"), zooms: zooms,
                    area: .bounds(bounds), clip: nil, pixelRatio: 1)
    }

    @Test(arguments: [1, 3, 7, 64, 4096])
    func bandsCoverEveryTileOnceWithinTheirLimit(limit: Int) throws {
        let pyramids = [
            try Self.pyramid(zooms: [0, 3, 6], bounds: LngLatBounds(west: -40, south: -30, east: 50, north: 35)),
            try Self.pyramid(zooms: [5], bounds: LngLatBounds(west: 170, south: -10, east: -170, north: 10)),
        ]
        var expected: [TileID] = []
        for pyramid in pyramids {
            for zoom in pyramid.zooms { expected += Array(pyramid.cover(zoom: zoom)) }
        }
        #expect(expected.count > 100)
        var bands = TileBands(pyramids: pyramids, limit: limit)
        var produced: [TileID] = []
        while let band = bands.next() {
            let tiles = band.spans.reduce(0) { $0 + $1.count }
            #expect(tiles <= limit && tiles > 0)
            #expect(band.xRange.count * band.yRange.count <= limit)
            for span in band.spans {
                #expect(band.xRange.contains(Int64(span.xRange.lowerBound)) && band.yRange.contains(Int64(span.y)))
                produced += span.xRange.map { TileID(z: band.zoom, x: $0, y: span.y) }
            }
        }
        #expect(produced == expected)
    }

    /// A work unit's bands hold exactly the unit's tiles; the units of a cut together hold every
    /// tile of the plan once (what lets nodes share a pack without fetching a tile twice).
    @Test(arguments: [16, 100, 4096])
    func theUnitsOfACutBandEveryTileOnce(unitTiles: Int) throws {
        let pyramids = [
            try Self.pyramid(zooms: [0, 2, 4, 6, 7], bounds: LngLatBounds(west: -40, south: -30, east: 50, north: 35)),
            try Self.pyramid(zooms: [5, 6], bounds: LngLatBounds(west: 170, south: -10, east: -170, north: 10)),
        ]
        var expected: [TileID: Int] = [:]
        for (index, pyramid) in pyramids.enumerated() {
            for zoom in pyramid.zooms {
                for tile in pyramid.cover(zoom: zoom) { expected[TileID(z: tile.z + 100 * index, x: tile.x, y: tile.y), default: 0] += 1 }
            }
        }
        var produced: [TileID: Int] = [:]
        let cut = WorkUnitCut(pyramids: pyramids, unitTiles: unitTiles)
        for unit in cut {
            var bands = TileBands(pyramids: pyramids, limit: 64, scope: unit.scope)
            var tiles = 0
            while let band = bands.next() {
                #expect(band.pyramidIndex == unit.scope.pyramid)
                for span in band.spans {
                    for x in span.xRange {
                        #expect(unit.scope.contains(pyramid: band.pyramidIndex, tile: TileID(z: band.zoom, x: x, y: span.y)))
                        produced[TileID(z: band.zoom + 100 * band.pyramidIndex, x: x, y: span.y), default: 0] += 1
                        tiles += 1
                    }
                }
            }
            #expect(tiles == unit.tiles, "unit \(unit.ordinal) \(unit.scope)")
        }
        #expect(produced == expected)
    }
}
