import Foundation
import Testing
@testable import Geo

/// `NearestFirstWalk`: every tile of every cover exactly once, bands in order of distance (each
/// tile in the band its own distance says), all tiles closer than a radius before any twice as
/// far, for boxes, geometries and points beyond the region.
@Suite struct NearestFirstWalkTests {
    static func walk(_ region: TileRegion, zooms: ClosedRange<Int>, center: LngLat, radius: Double)
        -> (walk: NearestFirstWalk, steps: [NearestFirstWalk.Step], covers: [TileCover]) {
        let covers = zooms.map { TileCover(region: region, zoom: $0) }
        var walk = NearestFirstWalk(center: center, bandWidth: radius / 4, covers: covers)
        let probe = walk
        var steps: [NearestFirstWalk.Step] = []
        while let step = walk.next() { steps.append(step) }
        return (probe, steps, covers)
    }

    static func tiles(_ steps: [NearestFirstWalk.Step], _ covers: [TileCover]) -> [TileID] {
        steps.flatMap { step in step.span.xRange.map { TileID(z: covers[step.cover].zoom, x: $0, y: step.span.y) } }
    }

    static func checkWalk(_ region: TileRegion, zooms: ClosedRange<Int>, center: LngLat, radius: Double) {
        let (walk, steps, covers) = walk(region, zooms: zooms, center: center, radius: radius)
        let walked = tiles(steps, covers)
        // Every tile exactly once.
        #expect(walked.count == Set(walked).count, "a tile came twice")
        #expect(Set(walked) == Set(covers.flatMap { Array($0) }), "not every tile of the covers")
        // Bands ascend, and each tile is in the band of its distance (up to rounding at a boundary).
        #expect(steps.map(\.band) == steps.map(\.band).sorted())
        for step in steps {
            for x in step.span.xRange {
                let distance = walk.distance(to: TileID(z: covers[step.cover].zoom, x: x, y: step.span.y))
                #expect(distance >= walk.bandStart(step.band) - 1e-6 && distance < walk.bandStart(step.band + 1) + 1e-6,
                        "tile at \(distance) m in band \(step.band)")
            }
        }
        // The start-area property: everything closer than the radius before anything twice as far.
        let distances = walked.map(walk.distance(to:))
        if let firstFar = distances.firstIndex(where: { $0 > 2 * radius }) {
            #expect(!distances[firstFar...].contains { $0 < radius })
        }
    }

    @Test func boxesAreWalkedWhollyNearestFirst() throws {
        let box = TileRegion.bounds(try LngLatBounds(west: 5, south: 44, east: 15, north: 50))
        Self.checkWalk(box, zooms: 0...9, center: LngLat(longitude: 8.5, latitude: 47.4), radius: 20_000)
        Self.checkWalk(box, zooms: 3...8, center: LngLat(longitude: 14.9, latitude: 44.1), radius: 5_000)
        // A centre outside the region: the region's tiles nearest it come first.
        Self.checkWalk(box, zooms: 4...8, center: LngLat(longitude: 30, latitude: 30), radius: 50_000)
    }

    @Test func geometriesAreWalkedWhollyNearestFirst() throws {
        let ring = [LngLat(longitude: 6, latitude: 45), LngLat(longitude: 14, latitude: 45.5), LngLat(longitude: 12, latitude: 49),
                    LngLat(longitude: 9, latitude: 47), LngLat(longitude: 6, latitude: 45)]
        let polygon = TileRegion.geometry(.polygon([ring]))
        Self.checkWalk(polygon, zooms: 2...9, center: LngLat(longitude: 9.5, latitude: 46.5), radius: 10_000)
        let line = TileRegion.geometry(.lineString([LngLat(longitude: 0, latitude: 0), LngLat(longitude: 20, latitude: 10)]))
        Self.checkWalk(line, zooms: 0...10, center: LngLat(longitude: 10, latitude: 5), radius: 8_000)
    }

    @Test func startAreaTilesComeFirstAtEveryZoom() throws {
        let box = TileRegion.bounds(try LngLatBounds(west: 7, south: 46, east: 10, north: 48))
        let center = LngLat(longitude: 8.5, latitude: 47.0)
        let radius = 5_000.0
        let (walk, steps, covers) = Self.walk(box, zooms: 8...13, center: center, radius: radius)
        let walked = Self.tiles(steps, covers)
        let near = walked.enumerated().filter { walk.distance(to: $0.element) < radius }
        // Near tiles exist at every zoom, and all of them lead the walk.
        #expect(Set(near.map(\.element.z)) == Set(8...13))
        #expect(near.map(\.offset) == Array(0..<near.count))
        // The centre's own tile at each zoom is at distance 0, in band 0.
        for zoom in 8...13 {
            let scale = Double(1 << zoom)
            let own = TileID(z: zoom, x: Int((center.longitude + 180) / 360 * scale),
                             y: Int(WebMercator.projectY(latitude: center.latitude) * scale))
            #expect(walk.distance(to: own) == 0)
        }
    }

    @Test func farBandsWidenSoAContinentTakesFewBands() throws {
        let europe = TileRegion.bounds(try LngLatBounds(west: -10, south: 35, east: 30, north: 60))
        let covers = (10...10).map { TileCover(region: europe, zoom: $0) }
        var walk = NearestFirstWalk(center: LngLat(longitude: 8, latitude: 47), bandWidth: 1_250, covers: covers)
        var bands = Set<Int>()
        var tiles = 0
        while let step = walk.next() {
            bands.insert(step.band)
            tiles += step.span.count
        }
        #expect(tiles == covers[0].count)
        #expect(bands.count < 60, "\(bands.count) bands")
        #expect(walk.bandStart(8) == 10_000 && walk.bandStart(9) == 12_500)
        #expect(walk.band(ofDistance: 9_999) == 7 && walk.band(ofDistance: 12_600) == 9)
    }
}
