import Foundation
import Geo
import Plan
import Testing
import WorkSharing

/// The cut decides which node fetches which tile: every tile of the plan must fall in exactly
/// one unit, each unit's count must be exact, units must stay near their size, and a huge pack
/// must be cut without walking its tiles.
@Suite struct WorkUnitCutTests {
    static func pyramid(_ region: TileRegion, zooms: [Int], clip: LngLatBounds? = nil) throws -> TilePyramid {
        TilePyramid(sourceID: "t", template: try TileURLTemplate("http://127.0.0.1/{z}/{x}/{y}.pbf"), zooms: zooms,
                    area: region, clip: clip, pixelRatio: 1)
    }

    static func polygon(_ points: [(Double, Double)]) -> Geometry {
        let ring = points.map { LngLat(longitude: $0.0, latitude: $0.1) }
        return .polygon([ring + [ring[0]]])
    }

    /// Every tile of every pyramid, enumerated (small plans only), against the units.
    static func expectExactPartition(_ cut: WorkUnitCut, sourceLocation: SourceLocation = #_sourceLocation) {
        let units = Array(cut)
        #expect(units.first?.scope == .resources, sourceLocation: sourceLocation)
        #expect(units.map(\.ordinal) == Array(0..<units.count), sourceLocation: sourceLocation)
        var counted = [Int](repeating: 0, count: units.count)
        var total = 0
        for (index, pyramid) in cut.pyramids.enumerated() {
            for zoom in pyramid.zooms {
                for tile in pyramid.cover(zoom: zoom) {
                    total += 1
                    let owners = units.indices.filter { units[$0].scope.contains(pyramid: index, tile: tile) }
                    #expect(owners.count == 1, "tile \(tile) of pyramid \(index) in units \(owners)", sourceLocation: sourceLocation)
                    if let owner = owners.first { counted[owner] += 1 }
                }
            }
        }
        #expect(total == cut.totalTiles, sourceLocation: sourceLocation)
        for unit in units.dropFirst() {
            #expect(counted[unit.ordinal] == unit.tiles, "unit \(unit)", sourceLocation: sourceLocation)
            #expect(unit.tiles > 0 && unit.tiles <= cut.unitTiles, "unit \(unit)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [1, 5, 64, 300, 4096])
    func boxesArePartitionedExactly(unitTiles: Int) throws {
        let cut = WorkUnitCut(pyramids: [
            try Self.pyramid(.bounds(LngLatBounds(west: -40, south: -30, east: 50, north: 35)), zooms: [0, 2, 3, 4, 6]),
            // Across the antimeridian: two column ranges per row.
            try Self.pyramid(.bounds(LngLatBounds(west: 170, south: -10, east: -170, north: 10)), zooms: [5, 7]),
        ], unitTiles: unitTiles)
        Self.expectExactPartition(cut)
    }

    @Test(arguments: [1, 7, 50, 500])
    func geometriesArePartitionedExactly(unitTiles: Int) throws {
        let concave = Self.polygon([(-60, -40), (60, -40), (60, 40), (0, 0), (-60, 40)])
        let line = Geometry.lineString([LngLat(longitude: -120, latitude: -50), LngLat(longitude: 100, latitude: 60)])
        let cut = WorkUnitCut(pyramids: [
            try Self.pyramid(.geometry(concave), zooms: [1, 2, 3, 4, 5, 6]),
            try Self.pyramid(.geometry(line), zooms: [4, 6, 7]),
            // Clipped to a TileJSON's bounds.
            try Self.pyramid(.geometry(concave), zooms: [5], clip: LngLatBounds(west: -10, south: -30, east: 45, north: 20)),
        ], unitTiles: unitTiles)
        Self.expectExactPartition(cut)
    }

    @Test func smallZoomsShareOneUnitAndLargeOnesAreCut() throws {
        let box = try LngLatBounds(west: -10, south: 35, east: 30, north: 60)
        let cut = WorkUnitCut(pyramids: [try Self.pyramid(.bounds(box), zooms: Array(0...9))], unitTiles: 100)
        let units = Array(cut)
        // z0…z4 hold 1+1+2+4+… tiles: together in the first tile unit.
        guard case .zooms(0, let zooms) = units[1].scope else {
            Issue.record("expected whole zooms first, got \(units[1])")
            return
        }
        #expect(zooms.lowerBound == 0 && zooms.count > 3)
        let z9 = units.filter { if case .window(_, 9, _, _) = $0.scope { true } else { false } }
        let z9Tiles = TileCover(region: .bounds(box), zoom: 9).count
        // Whole rows per unit: as many as fit in 100 tiles.
        let width = TileCover(region: .bounds(box), zoom: 9).spans.first { _ in true }!.count
        let rows = z9Tiles / width
        let rowsPerUnit = 100 / width
        #expect(width < 100)
        #expect(z9.count == (rows + rowsPerUnit - 1) / rowsPerUnit)
        #expect(z9.reduce(0) { $0 + $1.tiles } == z9Tiles)
        #expect(z9.allSatisfy { $0.tiles <= 100 })
    }

    @Test func emptyZoomsMakeNoUnits() throws {
        // A TileJSON clip that misses the region: every zoom is empty.
        let pyramid = try Self.pyramid(.bounds(LngLatBounds(west: 0, south: 0, east: 10, north: 10)), zooms: [3, 8],
                                       clip: LngLatBounds(west: 100, south: 0, east: 110, north: 10))
        let units = Array(WorkUnitCut(pyramids: [pyramid], unitTiles: 10))
        #expect(units.map(\.scope) == [.resources])
    }

    /// A world box to z24 is 3.7·10^14 tiles: cut in closed form, in bounded units, with exact sums.
    @Test func aWorldToZoom24IsCutWithoutWalkingItsTiles() throws {
        let world = try Self.pyramid(.bounds(LngLatBounds(west: -180, south: -85, east: 180, north: 85)), zooms: Array(0...24))
        let started = Date()
        let cut = WorkUnitCut(pyramids: [world], unitTiles: 4096, maximumUnits: 50_000)
        var units = 0
        var tiles = 0
        for unit in cut {
            units += 1
            tiles += unit.tiles
            #expect(unit.tiles <= cut.unitTiles)
        }
        #expect(tiles == cut.totalTiles)
        #expect(cut.totalTiles > 300_000_000_000_000)
        // About the maximum: whole rows per unit round each unit down a little, and each zoom's last
        // unit may be partial.
        #expect(units <= 50_000 * 101 / 100 + 25 + 1)
        #expect(cut.unitTiles >= cut.totalTiles / 50_000)
        #expect(Date().timeIntervalSince(started) < 30)
    }

    /// A continent-sized polygon at z14 is hundreds of millions of tiles: walked by rows, not tiles.
    @Test func aLargeGeometryIsCutByRows() throws {
        let continent = Self.polygon([(-10, 36), (30, 36), (40, 55), (20, 70), (-10, 60)])
        let pyramid = try Self.pyramid(.geometry(continent), zooms: [14])
        let started = Date()
        let cut = WorkUnitCut(pyramids: [pyramid], unitTiles: 4096)
        var tiles = 0
        var units = 0
        for unit in cut.dropFirst() {
            units += 1
            tiles += unit.tiles
            guard case .window(0, 14, let rows, let columns) = unit.scope else {
                Issue.record("unexpected \(unit)")
                break
            }
            #expect(rows.count * columns.count >= unit.tiles)
        }
        #expect(tiles == pyramid.tileCount)
        #expect(units >= tiles / 4096)
        #expect(Date().timeIntervalSince(started) < 30)
    }

    /// Two nodes cutting the same plan store the same units (the first one's, in the database).
    @Test func theCutIsDeterministic() throws {
        let region = Self.polygon([(-60, -40), (60, -40), (60, 40), (0, 0), (-60, 40)])
        let pyramids = [try Self.pyramid(.geometry(region), zooms: [2, 4, 6])]
        #expect(Array(WorkUnitCut(pyramids: pyramids, unitTiles: 33)) == Array(WorkUnitCut(pyramids: pyramids, unitTiles: 33)))
    }
}

extension WorkUnitCutTests {
    /// A `"glyphs": "region"` pack: its own fixed resources first (not `.resources`, which would
    /// mean every candidate range too), the tiles as without, and its glyph choice last.
    @Test func aRegionGlyphsPackEndsWithItsGlyphChoice() throws {
        let pyramid = try Self.pyramid(.bounds(LngLatBounds(west: -40, south: -30, east: 50, north: 35)), zooms: [2, 3, 4])
        let plain = Array(WorkUnitCut(pyramids: [pyramid], unitTiles: 16))
        let lean = Array(WorkUnitCut(pyramids: [pyramid], unitTiles: 16, fixedBeforeGlyphChoice: 7))
        #expect(lean.first?.scope == .fixed(0...6))
        #expect(lean.last == WorkUnit(ordinal: plain.count, scope: .glyphChoice, tiles: 0))
        #expect(Array(lean.dropFirst().dropLast()) == Array(plain.dropFirst()))
    }
}
