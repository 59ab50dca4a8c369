import Foundation
import Testing
@testable import Geo

/// Seeded random regions at zooms too large for the oracle: the cover must still stream each
/// tile once, in order, and agree exactly with its count.
@Suite struct CoverPropertyTests {
    @Test func randomPolygonsIterateOnceAndMatchCount() {
        var rng = SeededGenerator(seed: 0xC0FE_0001)
        for index in 0..<60 {
            let centre = (Double.random(in: -170...170, using: &rng), Double.random(in: -70...70, using: &rng))
            let radius = Double.random(in: 0.01...60, using: &rng)
            var rings = [randomRing(&rng, vertices: Int.random(in: 3...200, using: &rng), centre: centre,
                                    radius: radius, sortAngles: index % 3 != 0)]
            if index % 4 == 0 {
                rings.append(randomRing(&rng, vertices: 12, centre: centre, radius: radius / 3, sortAngles: true))
            }
            let geometry: Geometry = index % 5 == 0
                ? .multiPolygon([rings, [randomRing(&rng, vertices: 8, centre: centre, radius: radius, sortAngles: false)]])
                : .polygon(rings)
            // The zoom where the shape spans about 300 tiles across keeps each case fast.
            let zoom = max(0, min(14, Int(log2(300 * 360 / (2 * radius)))))
            check(geometry, zoom: zoom, case: index)
        }
    }

    @Test func randomLineCollectionsIterateOnceAndMatchCount() {
        var rng = SeededGenerator(seed: 0xC0FE_0002)
        for index in 0..<40 {
            var members = [Geometry]()
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                let line = (0..<Int.random(in: 2...30, using: &rng)).map { _ in
                    lngLat(Double.random(in: -180...180, using: &rng), Double.random(in: -90...90, using: &rng))
                }
                members.append(.lineString(line))
            }
            members.append(.multiPoint((0..<5).map { _ in lngLat(Double.random(in: -180...180, using: &rng), 0) }))
            members.append(.polygon([randomRing(&rng, vertices: 9, centre: (0, 0), radius: 40, sortAngles: false)]))
            check(.geometryCollection(members), zoom: Int.random(in: 0...9, using: &rng), case: index)
        }
    }

    @Test func randomBoxesIterateOnceAndMatchCount() throws {
        var rng = SeededGenerator(seed: 0xC0FE_0003)
        for index in 0..<200 {
            let south = Double.random(in: -90...90, using: &rng)
            let north = Double.random(in: south...90, using: &rng)
            let west = Double.random(in: -180...180, using: &rng)
            let east = index % 2 == 0 ? Double.random(in: -180...180, using: &rng) : min(180, west + Double.random(in: 0...2, using: &rng))
            let bounds = try LngLatBounds(west: west, south: south, east: east, north: north)
            let span = (east >= west ? east - west : 360 - west + east) + 1e-9
            let startZoom = max(0, min(22, Int(log2(200 * 360 / span))))
            var clip: LngLatBounds?
            if index % 3 == 0 {
                let clipWest = Double.random(in: -180...180, using: &rng)
                clip = try LngLatBounds(west: clipWest, south: -60, east: Double.random(in: -180...180, using: &rng), north: 60)
            }
            var cover = TileCover(region: .bounds(bounds), zoom: startZoom, within: clip)
            while cover.count > 20_000 { cover = TileCover(region: .bounds(bounds), zoom: cover.zoom - 1, within: clip) }
            let zoom = cover.zoom
            let (tiles, problems) = cover.checkedTiles()
            #expect(problems.isEmpty, "box \(index) \(bounds) z\(zoom): \(problems)")
            // Against the same box as a polygon cover, whose sweep is computed independently.
            if bounds.west < bounds.east, bounds.south < bounds.north, clip == nil {
                let ring = ring([(west, south), (east, south), (east, north), (west, north)])
                let polygon = TileCover(region: .geometry(.polygon([ring])), zoom: zoom)
                #expect(Array(polygon) == tiles, "box \(index) \(bounds) z\(zoom)")
            }
        }
    }

    @Test func clippedRandomPolygonsStayInsideTheClip() throws {
        var rng = SeededGenerator(seed: 0xC0FE_0004)
        for index in 0..<30 {
            let geometry = Geometry.polygon([randomRing(&rng, vertices: 40, centre: (0, 0), radius: 80, sortAngles: index % 2 == 0)])
            let clip = try LngLatBounds(west: Double.random(in: -180...0, using: &rng), south: -30,
                                        east: Double.random(in: 0...180, using: &rng), north: Double.random(in: -29...80, using: &rng))
            let zoom = Int.random(in: 0...8, using: &rng)
            let clipped = TileCover(region: .geometry(geometry), zoom: zoom, within: clip)
            let (tiles, problems) = clipped.checkedTiles()
            #expect(problems.isEmpty, "case \(index): \(problems)")
            let unclipped = Set(TileCover(region: .geometry(geometry), zoom: zoom))
            let box = Set(TileCover(region: .bounds(clip), zoom: zoom))
            #expect(Set(tiles) == unclipped.intersection(box), "case \(index) z\(zoom)")
        }
    }

    @Test func limitedCountsStopEarlyAndAgreeBelowTheLimit() throws {
        // A line down the whole map at z30 has 2^30 rows; with a limit only ~limit rows are swept.
        let meridian = TileRegion.geometry(.lineString([lngLat(10, 85), lngLat(10, -85)]))
        #expect(TileCover(region: meridian, zoom: 30).count(limit: 10_000) == nil)
        #expect(WebMercator.tileCount(region: meridian, zooms: 0...30, limit: 50_000) == nil)
        let expected = WebMercator.tileCount(region: meridian, zooms: 0...8)
        #expect(WebMercator.tileCount(region: meridian, zooms: 0...8, limit: expected) == expected)
        #expect(WebMercator.tileCount(region: meridian, zooms: 0...8, limit: expected - 1) == nil)
        let world = TileRegion.bounds(.world)
        #expect(WebMercator.tileCount(region: world, zooms: 0...30, limit: .max - 1) == ((1 << 62) - 1) / 3)
        #expect(WebMercator.tileCount(region: world, zooms: 0...2, limit: 20) == nil)
        #expect(WebMercator.tileCount(region: world, zooms: 0...2, limit: 21) == 21)
    }

    private func check(_ geometry: Geometry, zoom: Int, case index: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        var cover = TileCover(region: .geometry(geometry), zoom: zoom)
        while cover.count > 20_000 { cover = TileCover(region: .geometry(geometry), zoom: cover.zoom - 1) }
        let zoom = cover.zoom
        let (tiles, problems) = cover.checkedTiles()
        #expect(problems.isEmpty, "case \(index) z\(zoom): \(problems)", sourceLocation: sourceLocation)
        #expect(!tiles.isEmpty, "case \(index) z\(zoom): a valid geometry always has tiles", sourceLocation: sourceLocation)
        #expect(WebMercator.tileCount(region: .geometry(geometry), zooms: zoom...zoom) == tiles.count, sourceLocation: sourceLocation)
    }
}
