import Foundation
import Testing
@testable import Geo

/// Budgeted counts: exact while the row budget lasts, then extrapolated within provable bounds.
@Suite struct CoverCounterTests {
    /// A lopsided polygon (a rough country outline) and a line, the shapes whose deep counts are
    /// extrapolated in practice. Computed, not `static let`: a global holding an indirect enum
    /// keeps its box's address with the case in the pointer's spare bits, which LeakSanitizer
    /// cannot see, so `make sanitize` reported both boxes as leaked.
    static var country: Geometry { .polygon([ring([(-4.8, 48.4), (-1.2, 43.4), (3.2, 42.4), (7.6, 43.8), (8.2, 49.0),
                                                (2.5, 51.1), (-1.6, 49.7)])]) }
    static var road: Geometry { .lineString([lngLat(-5.0, 36.1), lngLat(2.3, 48.9), lngLat(13.4, 52.5), lngLat(30.3, 59.9)]) }

    @Test func boxesAreExactAtEveryZoomWhateverTheBudget() {
        let counter = CoverCounter(region: .bounds(LngLatBounds(uncheckedWest: -180, south: -85.06, east: 180, north: 85.06)))
        let counts = counter.counts(zooms: [0, 15, 30], rowBudget: 0)
        #expect(counts.map(\.tiles) == [1, 1 << 30, 1 << 60])
        #expect(counts.allSatisfy { $0.exact })
    }

    @Test func geometryCountsAreExactWithinTheBudget() {
        let counts = CoverCounter(region: .geometry(Self.country)).counts(zooms: Array(0...12), rowBudget: 1 << 20)
        #expect(counts.allSatisfy { $0.exact })
        for count in counts {
            #expect(count.tiles == TileCover(region: .geometry(Self.country), zoom: count.zoom).count)
        }
    }

    @Test func deepZoomsAreExtrapolatedCloseToTheTrueCount() {
        for geometry in [Self.country, Self.road] {
            // 600 rows reach about zoom 10 exactly; deeper zooms are extrapolated.
            let counts = CoverCounter(region: .geometry(geometry)).counts(zooms: Array(8...15), rowBudget: 600)
            #expect(counts.first?.exact == true)
            #expect(counts.last?.exact == false)
            for count in counts where !count.exact {
                let truth = TileCover(region: .geometry(geometry), zoom: count.zoom).count
                let error = abs(Double(count.tiles - truth)) / Double(truth)
                #expect(error < 0.05, "z\(count.zoom): \(count.tiles) estimated, \(truth) exact")
            }
        }
    }

    @Test func aWorldPolygonToZoom30StaysWithinItsBoundingBox() {
        let world = Geometry.polygon([ring([(-179, -80), (179, -80), (179, 80), (-179, 80)])])
        let counts = CoverCounter(region: .geometry(world)).counts(zooms: Array(0...30), rowBudget: 1 << 16)
        #expect(counts.count == 31)
        let box = TileCover(region: .bounds(LngLatBounds(uncheckedWest: -179, south: -80, east: 179, north: 80)), zoom: 30).count
        let last = counts[30]
        #expect(!last.exact)
        #expect(last.tiles <= box && last.tiles >= counts[29].tiles)
        // Monotone: a cover never shrinks with zoom.
        #expect(zip(counts, counts.dropFirst()).allSatisfy { $0.tiles <= $1.tiles })
    }
}
