import Geo
import Plan
import Testing
import WorkSharing

/// A claim's split decides which node fetches which tile: the head and the rest must hold every
/// tile of the unit exactly once, with exact counts, the head never more than the part and never
/// nothing — for every unit of boxes, an antimeridian box, concave polygons and lines, and every
/// part size from one tile to the whole unit.
@Suite struct WorkUnitSplitTests {
    static func pyramids() throws -> [TilePyramid] {
        let concave = WorkUnitCutTests.polygon([(-60, -40), (60, -40), (60, 40), (0, 0), (-60, 40)])
        let line = Geometry.lineString([LngLat(longitude: -120, latitude: -50), LngLat(longitude: 100, latitude: 60)])
        return [
            try WorkUnitCutTests.pyramid(.bounds(LngLatBounds(west: -40, south: -30, east: 50, north: 35)), zooms: [0, 2, 3, 4, 6]),
            try WorkUnitCutTests.pyramid(.bounds(LngLatBounds(west: 170, south: -10, east: -170, north: 10)), zooms: [5, 7]),
            try WorkUnitCutTests.pyramid(.geometry(concave), zooms: [1, 2, 3, 4, 5, 6]),
            try WorkUnitCutTests.pyramid(.geometry(line), zooms: [4, 6, 7]),
        ]
    }

    /// The tiles of `scope`, enumerated (small units only).
    static func tiles(_ scope: WorkUnit.Scope, in pyramids: [TilePyramid]) -> Set<TileID> {
        guard let index = scope.pyramid else { return [] }
        let pyramid = pyramids[index]
        var found: Set<TileID> = []
        let zooms: [Int] = switch scope {
        case .resources, .fixed, .glyphChoice: []
        case .zooms(_, let range): pyramid.zooms.filter(range.contains)
        case .window(_, let zoom, _, _): [zoom]
        }
        for zoom in zooms {
            for tile in pyramid.cover(zoom: zoom) where scope.contains(pyramid: index, tile: tile) { found.insert(tile) }
        }
        return found
    }

    static func expectExactSplit(_ unit: WorkUnit, part: Int, pyramids: [TilePyramid], unitTiles: Set<TileID>,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        guard let parts = WorkUnitSplit.split(unit.scope, part: part, pyramids: pyramids) else {
            #expect(part >= unit.tiles, "\(unit) could not be split for a part of \(part)", sourceLocation: sourceLocation)
            return
        }
        #expect(part < unit.tiles, "\(unit) split for a part of \(part): \(parts)", sourceLocation: sourceLocation)
        #expect((2...4).contains(parts.count), sourceLocation: sourceLocation)
        #expect(parts[0].tiles >= 1 && parts[0].tiles <= part, "head \(parts[0]) for a part of \(part)", sourceLocation: sourceLocation)
        var union: Set<TileID> = []
        for piece in parts {
            #expect(piece.scope.pyramid == unit.scope.pyramid, sourceLocation: sourceLocation)
            let own = tiles(piece.scope, in: pyramids)
            #expect(own.count == piece.tiles && piece.tiles >= 1, "\(piece) holds \(own.count)", sourceLocation: sourceLocation)
            #expect(union.isDisjoint(with: own), "\(piece) overlaps another part of \(unit)", sourceLocation: sourceLocation)
            union.formUnion(own)
        }
        #expect(union == unitTiles, "the parts of \(unit) for \(part) hold other tiles", sourceLocation: sourceLocation)
    }

    @Test(arguments: [7, 60, 300, 4096])
    func everyUnitSplitsExactlyForEveryPart(unitTiles: Int) throws {
        let pyramids = try Self.pyramids()
        for unit in WorkUnitCut(pyramids: pyramids, unitTiles: unitTiles).dropFirst() {
            let own = Self.tiles(unit.scope, in: pyramids)
            #expect(own.count == unit.tiles)
            let parts = Set([1, 2, 3, 5, 17, unit.tiles / 3, unit.tiles / 2, unit.tiles - 1, unit.tiles, unit.tiles + 9]).filter { $0 >= 1 }
            for part in parts.sorted() { Self.expectExactSplit(unit, part: part, pyramids: pyramids, unitTiles: own) }
        }
    }

    /// Claims one after another: each takes a head of the first unit left, the rest is claimed
    /// next — until nothing splits. Every tile is claimed once; every head fits its part.
    @Test(arguments: [1, 13, 128])
    func claimsOneAfterAnotherTakeEveryTileOnce(part: Int) throws {
        let pyramids = try Self.pyramids()
        for unit in WorkUnitCut(pyramids: pyramids, unitTiles: 2_000).dropFirst() {
            var left = [WorkSplitUnit(scope: unit.scope, tiles: unit.tiles)]
            var claimed: [WorkSplitUnit] = []
            while let next = left.first {
                left.removeFirst()
                if let parts = WorkUnitSplit.split(next.scope, part: part, pyramids: pyramids) {
                    claimed.append(WorkSplitUnit(scope: parts[0].scope, tiles: parts[0].tiles))
                    left = parts.dropFirst().map { WorkSplitUnit(scope: $0.scope, tiles: $0.tiles) } + left
                } else {
                    claimed.append(next)
                }
            }
            #expect(claimed.allSatisfy { $0.tiles <= part })
            var union: Set<TileID> = []
            for piece in claimed {
                let own = Self.tiles(piece.scope, in: pyramids)
                #expect(own.count == piece.tiles)
                #expect(union.isDisjoint(with: own))
                union.formUnion(own)
            }
            #expect(union == Self.tiles(unit.scope, in: pyramids), "\(unit)")
            #expect(claimed.reduce(0) { $0 + $1.tiles } == unit.tiles)
        }
    }

    /// z0–6 of the world (5,461 tiles, the pack of issue 30) with the default unit size: the z6
    /// unit of 4,096 tiles is a zoom band; a head of 455 tiles is whole rows of a z6 window.
    @Test func aWholeZoomIsCutAsAWindowOverTheWorld() throws {
        let world = try WorkUnitCutTests.pyramid(.bounds(LngLatBounds(west: -180, south: -85.0511, east: 180, north: 85.0511)),
                                                 zooms: Array(0...6))
        let units = Array(WorkUnitCut(pyramids: [world], unitTiles: 4096))
        #expect(units.map(\.tiles) == [0, 1365, 4096])
        let parts = try #require(WorkUnitSplit.split(units[2].scope, part: 455, pyramids: [world]))
        #expect(parts.map(\.tiles) == [448, 4096 - 448])
        #expect(parts[0].scope == .window(pyramid: 0, zoom: 6, rows: 0...6, columns: 0...63))
        #expect(parts[1].scope == .window(pyramid: 0, zoom: 6, rows: 7...63, columns: 0...63))
        // The band of z0–5 gives its leading whole zooms.
        let band = try #require(WorkUnitSplit.split(units[1].scope, part: 455, pyramids: [world]))
        #expect(band.map(\.scope) == [.zooms(pyramid: 0, 0...4), .zooms(pyramid: 0, 5...5)])
        #expect(band.map(\.tiles) == [341, 1024])
        // A head smaller than z0: the one tile of z0 cannot be cut further, z0 is the head.
        let smallest = try #require(WorkUnitSplit.split(units[1].scope, part: 1, pyramids: [world]))
        #expect(smallest.map(\.tiles) == [1, 1364])
    }

    /// The fixed resources (a style's glyph ranges alone are hundreds) are cut by position:
    /// claims one after another take every position once, none more than the part.
    @Test(arguments: [1, 7, 128, 519, 520, 600])
    func theFixedResourcesAreCutByPosition(part: Int) throws {
        let count = 520
        #expect(WorkUnitSplit.size(of: WorkUnit(ordinal: 0, scope: .resources, tiles: 0), fixedResources: count) == count)
        var left: [WorkUnit.Scope] = [.resources]
        var taken: [Int] = []
        while let next = left.first {
            left.removeFirst()
            if let parts = WorkUnitSplit.split(next, part: part, pyramids: [], fixedResources: count) {
                #expect(parts.count == 2 && parts.allSatisfy { $0.tiles == 0 })
                let head = parts[0].scope.fixedPositions(count: count)
                #expect(head.count == part)
                taken += head
                left = parts.dropFirst().map(\.scope) + left
            } else {
                let positions = next.fixedPositions(count: count)
                #expect(positions.count <= part)
                taken += positions
            }
        }
        #expect(taken == Array(0..<count))
        #expect(WorkUnitSplit.split(.resources, part: 5, pyramids: [], fixedResources: 0) == nil, "a revalidation's unit is whole")
        #expect(WorkUnit.Scope.fixed(10...19).fixedPositions(count: 15) == 10..<15, "clamped to the plan")
        #expect(WorkUnit.Scope.window(pyramid: 0, zoom: 1, rows: 0...1, columns: 0...1).fixedPositions(count: 15).isEmpty)
    }

    @Test func whatCannotBeSplitIsNot() throws {
        let pyramids = try Self.pyramids()
        #expect(WorkUnitSplit.split(.resources, part: 3, pyramids: pyramids) == nil, "no fixed resources to cut")
        #expect(WorkUnitSplit.split(.zooms(pyramid: 9, 0...3), part: 3, pyramids: pyramids) == nil)
        #expect(WorkUnitSplit.split(.zooms(pyramid: 0, 0...3), part: 0, pyramids: pyramids) == nil)
        // One tile.
        #expect(WorkUnitSplit.split(.zooms(pyramid: 0, 0...0), part: 1, pyramids: pyramids) == nil)
        // A window outside the cover.
        #expect(WorkUnitSplit.split(.window(pyramid: 0, zoom: 6, rows: 0...1, columns: 0...1), part: 1, pyramids: pyramids) == nil)
    }
}

struct WorkSplitUnit {
    let scope: WorkUnit.Scope
    let tiles: Int
}

@Suite struct ClaimSizingTests {
    @Test func aPartIsTheRemainderOverTheSlotsWithinFloorAndCeiling() {
        let sizing = ClaimSizing(floor: 128, ceiling: 4096)
        // 5,461 tiles over three nodes of two slots: 911 each.
        #expect(sizing.part(remaining: 5461, slots: 6) == 911)
        #expect(sizing.part(remaining: 50_000, slots: 6) == 4096)
        #expect(sizing.part(remaining: 300, slots: 6) == 128)
        #expect(sizing.part(remaining: 0, slots: 6) == 128)
        #expect(sizing.part(remaining: 1000, slots: 0) == 1000)
        for remaining in stride(from: 0, through: 20_000, by: 37) {
            for slots in 1...12 {
                let part = sizing.part(remaining: remaining, slots: slots)
                #expect((128...4096).contains(part))
                // Enough parts for every slot, unless the floor or the ceiling holds it.
                #expect(part * slots >= remaining || part == 4096)
                #expect((part - 1) * slots < remaining || part == 128)
            }
        }
    }

    @Test func theFloorNeverExceedsTheCeilingAndNoCrumbsAreLeft() {
        let small = ClaimSizing(floor: 500, ceiling: 64)
        #expect(small.floor == 64 && small.ceiling == 64)
        #expect(small.part(remaining: 10_000, slots: 3) == 64)
        let sizing = ClaimSizing(floor: 128, ceiling: 4096)
        #expect(sizing.splits(1000, part: 872))
        #expect(!sizing.splits(1000, part: 873), "a remainder under the floor goes with the head")
        #expect(!sizing.splits(100, part: 128))
    }
}
