import Testing
@testable import Geo

@Suite struct BoundsCoverTests {
    /// Known answers. z0/z1 are checkable by eye; z14/z22 were computed outside Swift (Python,
    /// IEEE doubles) from the projection formula: rows floor(y_north)…ceil(y_south)-1, columns
    /// likewise per antimeridian part.
    static let knownCounts: [(bounds: [Double], zoom: Int, count: Int)] = [
        // Crosses the antimeridian: two column ranges, one at each edge of the world.
        ([170, -10, -170, 10], 0, 1),
        ([170, -10, -170, 10], 1, 4),
        ([170, -10, -170, 10], 14, 916 * (456 + 456)),
        ([170, -10, -170, 10], 22, 234_210 * (116_509 + 116_509)),
        // Touches the north pole: clamped to 85.0511°, reaching row 0.
        ([-20, 60, 30, 90], 0, 1),
        ([-20, 60, 30, 90], 1, 2),
        ([-20, 60, 30, 90], 14, 4758 * 2277),
        ([-20, 60, 30, 90], 22, 1_218_025 * 582_543),
        // Both poles and the antimeridian.
        ([179, -90, -179, 90], 0, 1),
        ([179, -90, -179, 90], 1, 4),
        ([179, -90, -179, 90], 14, 16384 * (46 + 46)),
        ([179, -90, -179, 90], 22, 4_194_304 * (11_651 + 11_651)),
        // Touches the south pole: reaches row 2^z - 1.
        ([-180, -90, 180, -80], 0, 1),
        ([-180, -90, 180, -80], 1, 2),
        ([-180, -90, 180, -80], 14, 1840 * 16384),
        ([-180, -90, 180, -80], 22, 470_851 * 4_194_304),
        // Crossing parts meeting in one z1 column pair: merged, never duplicated.
        ([100, -90, -100, 90], 1, 4),
        ([100, -90, -100, 90], 14, 16384 * (3641 + 3641)),
    ]

    @Test(arguments: knownCounts.indices)
    func knownCount(_ index: Int) throws {
        let (values, zoom, expected) = Self.knownCounts[index]
        let bounds = try LngLatBounds(west: values[0], south: values[1], east: values[2], north: values[3])
        let cover = TileCover(region: .bounds(bounds), zoom: zoom)
        #expect(cover.count == expected)
        if zoom <= 14 { #expect(cover.spans.reduce(0) { $0 + $1.count } == expected) }
        if zoom <= 6 {
            #expect(Set(cover) == ReferenceCover.tiles(.bounds(bounds), zoom: zoom))
        }
    }

    @Test func poleAndAntimeridianBoxesMatchReference() throws {
        for values in Self.knownCounts.map(\.bounds) + [[-10, -10, 10, 10], [0, 0, 0.001, 0.001], [-45, 0, 45, 0]] {
            let bounds = try LngLatBounds(west: values[0], south: values[1], east: values[2], north: values[3])
            for zoom in 0...6 {
                let cover = TileCover(region: .bounds(bounds), zoom: zoom)
                let (tiles, problems) = cover.checkedTiles()
                #expect(problems.isEmpty, "\(values) z\(zoom): \(problems)")
                #expect(Set(tiles) == ReferenceCover.tiles(.bounds(bounds), zoom: zoom), "\(values) z\(zoom)")
            }
        }
    }

    @Test func boxEdgesOnTileEdgesTakeNoNeighbours() throws {
        // [0°, 90°] × [0°, 85.05°] is exactly the z2 tiles x 2, y 0…1: nothing east or south.
        let bounds = try LngLatBounds(west: 0, south: 0, east: 90, north: 90)
        #expect(Array(TileCover(region: .bounds(bounds), zoom: 2)) ==
                [TileID(z: 2, x: 2, y: 0), TileID(z: 2, x: 2, y: 1)])
    }

    @Test func worldCoversEveryTile() {
        for zoom in [0, 1, 5, 14, 22, 30] {
            let n = 1 << zoom
            #expect(TileCover(region: .bounds(.world), zoom: zoom).count == n * n)
        }
    }

    @Test func worldSumOverAllZoomsFitsInt() {
        // (4^31 - 1) / 3 tiles over z0-30, about 1.43e18, below Int64.max.
        #expect(WebMercator.tileCount(region: .bounds(.world), zooms: 0...30) == ((1 << 62) - 1) / 3)
        // z0-22: (4^23 - 1) / 3, the 2.3e13 of the benchmark.
        #expect(WebMercator.tileCount(region: .bounds(.world), zooms: 0...22) == ((1 << 46) - 1) / 3)
    }

    @Test func zoomsOutsideTheGridAreClamped() {
        #expect(TileCover(region: .bounds(.world), zoom: -3).zoom == 0)
        #expect(TileCover(region: .bounds(.world), zoom: 99).zoom == 30)
    }

    @Test func clipIntersectsClosedForm() throws {
        let box = try LngLatBounds(west: 170, south: -10, east: -170, north: 10)
        let clip = try LngLatBounds(west: -175, south: -80, east: 0, north: 0)
        for zoom in 0...6 {
            let cover = TileCover(region: .bounds(box), zoom: zoom, within: clip)
            let expected = ReferenceCover.tiles(.bounds(box), zoom: zoom)
                .intersection(ReferenceCover.tiles(.bounds(clip), zoom: zoom))
            #expect(Set(cover) == expected)
            #expect(cover.count == expected.count)
        }
    }

    @Test func invalidBoundsAreRejectedWithPointers() {
        func pointer(_ values: [Any]) -> String? {
            do {
                _ = try LngLatBounds(geoJSON: values, pointer: "/bounds")
                return nil
            } catch {
                return error.pointer
            }
        }
        #expect(pointer([-10, 10, 10, -10]) == "/bounds/1")
        #expect(pointer([-181, 0, 10, 10]) == "/bounds/0")
        #expect(pointer([0, 0, 10, 91]) == "/bounds/3")
        #expect(pointer([0, 0, Double.nan, 10]) == "/bounds/2")
        #expect(pointer([0, 0, 10]) == "/bounds")
        #expect(pointer([0, "0", 10, 10]) == "/bounds/1")
        #expect(pointer([0, true, 10, 10]) == "/bounds/1")
        #expect(pointer([170, -10, -170, 10]) == nil)
    }
}
