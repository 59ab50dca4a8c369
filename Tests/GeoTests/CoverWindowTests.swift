import Foundation
import Testing
@testable import Geo

/// A work unit's share of a cover: the spans inside a window of rows and columns are exactly the
/// cover's tiles inside it — for boxes (also clipped), polygons, lines and the antimeridian.
@Suite struct CoverWindowTests {
    static func tiles(_ spans: TileSpans) -> Set<TileID> {
        var tiles: Set<TileID> = []
        for span in spans {
            for x in span.xRange { tiles.insert(TileID(z: spans.zoom, x: x, y: span.y)) }
        }
        return tiles
    }

    static func check(_ cover: TileCover, seed: UInt64) {
        let all = Set(cover)
        let last = (1 << cover.zoom) - 1
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<40 {
            let (r0, r1) = (Int.random(in: 0...last, using: &rng), Int.random(in: 0...last, using: &rng))
            let (c0, c1) = (Int.random(in: 0...last, using: &rng), Int.random(in: 0...last, using: &rng))
            let (rows, columns) = (min(r0, r1)...max(r0, r1), min(c0, c1)...max(c0, c1))
            let inside = all.filter { rows.contains($0.y) && columns.contains($0.x) }
            #expect(tiles(cover.spans(rows: rows, columns: columns)) == inside, "zoom \(cover.zoom) rows \(rows) columns \(columns)")
        }
        // Windows that tile the grid add up to the cover, once each.
        let half = (last + 1) / 2
        let quarters = [(0...max(0, half - 1), 0...last), (half...last, 0...last)].map { tiles(cover.spans(rows: $0.0, columns: $0.1)) }
        #expect(quarters.reduce(0) { $0 + $1.count } == all.count && quarters.reduce(Set<TileID>()) { $0.union($1) } == all)
    }

    @Test func boxesClippedOrNot() throws {
        let box = try LngLatBounds(west: -30, south: -20, east: 40, north: 50)
        Self.check(TileCover(region: .bounds(box), zoom: 6), seed: 1)
        Self.check(TileCover(region: .bounds(box), zoom: 6, within: try LngLatBounds(west: 0, south: 0, east: 60, north: 60)), seed: 2)
        Self.check(TileCover(region: .bounds(try LngLatBounds(west: 170, south: -10, east: -170, north: 10)), zoom: 5), seed: 3)
    }

    @Test func geometries() throws {
        var rng = SeededGenerator(seed: 7)
        let polygon = Geometry.polygon([randomRing(&rng, vertices: 9, centre: (10, 20), radius: 30, sortAngles: false)])
        Self.check(TileCover(region: .geometry(polygon), zoom: 7), seed: 4)
        Self.check(TileCover(region: .geometry(polygon), zoom: 7, within: try LngLatBounds(west: 0, south: 10, east: 30, north: 40)), seed: 5)
        let line = Geometry.lineString([lngLat(-50, -30), lngLat(10, 5), lngLat(60, 40)])
        Self.check(TileCover(region: .geometry(line), zoom: 8), seed: 6)
    }
}
