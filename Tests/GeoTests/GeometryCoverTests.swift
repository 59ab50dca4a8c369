import Foundation
import Testing
@testable import Geo

/// Geometry covers against the brute-force `ReferenceCover` at small zooms.
@Suite struct GeometryCoverTests {
    private func expectMatchesReference(_ geometry: Geometry, zooms: ClosedRange<Int> = 0...6,
                                        sourceLocation: SourceLocation = #_sourceLocation) {
        for zoom in zooms {
            let cover = TileCover(region: .geometry(geometry), zoom: zoom)
            let (tiles, problems) = cover.checkedTiles()
            #expect(problems.isEmpty, "z\(zoom): \(problems)", sourceLocation: sourceLocation)
            let expected = ReferenceCover.tiles(.geometry(geometry), zoom: zoom)
            let actual = Set(tiles)
            #expect(actual == expected,
                    "z\(zoom): extra \(actual.subtracting(expected).sorted()), missing \(expected.subtracting(actual).sorted())",
                    sourceLocation: sourceLocation)
        }
    }

    @Test func polygonWithHoleExcludesTheHole() {
        let outer = ring([(-60, -50), (60, -50), (60, 50), (-60, 50)])
        let hole = ring([(-30, -25), (30, -25), (30, 25), (-30, 25)])
        let polygon = Geometry.polygon([outer, hole])
        expectMatchesReference(polygon)
        // At z4 the hole holds whole tiles: fewer tiles than the outline alone.
        let withHole = TileCover(region: .geometry(polygon), zoom: 4).count
        let without = TileCover(region: .geometry(.polygon([outer])), zoom: 4).count
        #expect(withHole < without)
        #expect(!Set(TileCover(region: .geometry(polygon), zoom: 4)).contains(TileID(z: 4, x: 8, y: 7)))
    }

    @Test func holeWithSameOrientationIsStillAHole() {
        let outer = ring([(-60, -50), (60, -50), (60, 50), (-60, 50)])
        let hole = ring([(-30, -25), (30, -25), (30, 25), (-30, 25)]) // same winding as outer
        let cover = Set(TileCover(region: .geometry(.polygon([outer, hole])), zoom: 4))
        #expect(!cover.contains(TileID(z: 4, x: 8, y: 7)))
        expectMatchesReference(.polygon([outer, hole]), zooms: 3...5)
    }

    @Test func bowTieCoversBothLobes() {
        let bowTie = Geometry.polygon([ring([(-100, -60), (100, 60), (100, -60), (-100, 60)])])
        expectMatchesReference(bowTie)
        let cover = Set(TileCover(region: .geometry(bowTie), zoom: 3))
        #expect(cover.contains(TileID(z: 3, x: 1, y: 4))) // western lobe
        #expect(cover.contains(TileID(z: 3, x: 6, y: 4))) // eastern lobe
    }

    @Test func pentagramCentreIsInsideUnderNonZero() {
        // Winding 2 in the centre: even-odd would leave it out, non-zero keeps it.
        let points = (0..<5).map { k -> (Double, Double) in
            let angle = Double(k * 2 % 5) * 2 * .pi / 5 + .pi / 2
            return (100 * cos(angle), 70 * sin(angle))
        }
        let star = Geometry.polygon([ring(points)])
        expectMatchesReference(star)
        #expect(Set(TileCover(region: .geometry(star), zoom: 4)).contains(TileID(z: 4, x: 8, y: 7)))
    }

    @Test func lineAlongTileEdgeTakesOwningSide() {
        // The equator is the edge between rows 2^(z-1) - 1 and 2^(z-1): the southern row owns it.
        let equator = Geometry.lineString([lngLat(-45, 0), lngLat(45, 0)])
        expectMatchesReference(equator)
        let z2 = Array(TileCover(region: .geometry(equator), zoom: 2))
        #expect(z2 == [TileID(z: 2, x: 1, y: 2), TileID(z: 2, x: 2, y: 2)])
        // Lon 0 is the edge between columns: the eastern column owns it.
        let meridian = Geometry.lineString([lngLat(0, 10), lngLat(0, 60)])
        expectMatchesReference(meridian)
        #expect(Array(TileCover(region: .geometry(meridian), zoom: 1)) == [TileID(z: 1, x: 1, y: 0)])
    }

    @Test func diagonalLinesThroughCornersTakeOnlyOwningTiles() {
        // Corner to corner of the world, exactly through every grid corner (k, k): each corner
        // belongs to tile (k, k) alone, so the cover is the diagonal.
        let diagonal = Geometry.lineString([lngLat(-180, 90), lngLat(180, -90)])
        expectMatchesReference(diagonal)
        #expect(Array(TileCover(region: .geometry(diagonal), zoom: 3)) == (0..<8).map { TileID(z: 3, x: $0, y: $0) })
        // The other diagonal meets corners (n - j, j) at each row's top edge, owned by the tile
        // south-east of the corner: two tiles per row but the first.
        let anti = Geometry.lineString([lngLat(-180, -90), lngLat(180, 90)])
        expectMatchesReference(anti)
        #expect(TileCover(region: .geometry(anti), zoom: 3).count == 15)
    }

    @Test func pointsOnEdgesBelongToOneTile() {
        let points = Geometry.multiPoint([lngLat(0, 0), lngLat(-180, 85.06), lngLat(180, -90), lngLat(12.5, 41.9)])
        expectMatchesReference(points)
        #expect(Array(TileCover(region: .geometry(.point(lngLat(0, 0))), zoom: 1)) == [TileID(z: 1, x: 1, y: 1)])
        #expect(Array(TileCover(region: .geometry(.point(lngLat(180, -90))), zoom: 2)) == [TileID(z: 2, x: 3, y: 3)])
    }

    @Test func overlappingCollectionMembersYieldEachTileOnce() {
        let a = Geometry.polygon([ring([(-50, -40), (30, -40), (30, 40), (-50, 40)])])
        let b = Geometry.multiPolygon([[ring([(-20, -30), (60, -30), (60, 50), (-20, 50)])],
                                       [ring([(-40, -20), (-10, -20), (-10, 10), (-40, 10)])]])
        let line = Geometry.lineString([lngLat(-170, 20), lngLat(170, -20)])
        let collection = Geometry.geometryCollection([a, b, line, .point(lngLat(10, 10)),
                                                      .geometryCollection([a])])
        expectMatchesReference(collection)
    }

    @Test func oppositeOrientedMultiPolygonMembersDoNotCancel() {
        let square = ring([(-40, -30), (40, -30), (40, 30), (-40, 30)])
        let reversed = Array(square.reversed())
        let multi = Geometry.multiPolygon([[square], [reversed]])
        let single = Geometry.polygon([square])
        for zoom in 0...6 {
            #expect(Array(TileCover(region: .geometry(multi), zoom: zoom)) ==
                    Array(TileCover(region: .geometry(single), zoom: zoom)))
        }
    }

    @Test func boxPolygonCoversLikeTheBox() throws {
        let box = try LngLatBounds(west: -33.3, south: -12.1, east: 71.7, north: 48.2)
        let polygon = Geometry.polygon([ring([(-33.3, -12.1), (71.7, -12.1), (71.7, 48.2), (-33.3, 48.2)])])
        for zoom in [0, 3, 9, 12] {
            #expect(Array(TileCover(region: .geometry(polygon), zoom: zoom)) ==
                    Array(TileCover(region: .bounds(box), zoom: zoom)))
        }
    }

    @Test func randomPolygonsMatchReference() {
        var rng = SeededGenerator(seed: 0x5EED_0001)
        for index in 0..<40 {
            let centre = (Double.random(in: -150...150, using: &rng), Double.random(in: -60...60, using: &rng))
            let outer = randomRing(&rng, vertices: Int.random(in: 3...12, using: &rng), centre: centre,
                                   radius: Double.random(in: 5...80, using: &rng), sortAngles: index % 2 == 0)
            var rings = [outer]
            if index % 3 == 0 {
                rings.append(randomRing(&rng, vertices: 5, centre: centre, radius: 4, sortAngles: true))
            }
            expectMatchesReference(.polygon(rings), zooms: 0...5)
        }
    }

    @Test func randomLinesMatchReference() {
        var rng = SeededGenerator(seed: 0x5EED_0002)
        for _ in 0..<40 {
            let line = (0..<Int.random(in: 2...8, using: &rng)).map { _ in
                lngLat(Double.random(in: -180...180, using: &rng), Double.random(in: -85...85, using: &rng))
            }
            expectMatchesReference(.lineString(line), zooms: 0...5)
        }
    }

    @Test func clipDropsTilesOutsideTileJSONBounds() throws {
        let polygon = Geometry.polygon([ring([(-60, -50), (60, -50), (60, 50), (-60, 50)])])
        let clip = try LngLatBounds(west: 0, south: 0, east: 90, north: 60)
        for zoom in 0...6 {
            let clipped = TileCover(region: .geometry(polygon), zoom: zoom, within: clip)
            let (tiles, problems) = clipped.checkedTiles()
            #expect(problems.isEmpty)
            let expected = ReferenceCover.tiles(.geometry(polygon), zoom: zoom)
                .intersection(ReferenceCover.tiles(.bounds(clip), zoom: zoom))
            #expect(Set(tiles) == expected)
        }
    }
}
