import Foundation
@testable import Geo

/// SplitMix64: a seeded generator so property tests are the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func lngLat(_ longitude: Double, _ latitude: Double) -> LngLat {
    LngLat(longitude: longitude, latitude: latitude)
}

/// A closed ring through the given positions.
func ring(_ positions: [(Double, Double)]) -> [LngLat] {
    let ring = positions.map { lngLat($0.0, $0.1) }
    return ring + [ring[0]]
}

/// A random simple-or-not polygon: `count` vertices at random angles and radii around a
/// centre, so some are star-shaped and some self-intersect.
func randomRing(_ rng: inout SeededGenerator, vertices count: Int, centre: (Double, Double), radius: Double, sortAngles: Bool) -> [LngLat] {
    var angles = (0..<count).map { _ in Double.random(in: 0..<(2 * .pi), using: &rng) }
    if sortAngles { angles.sort() }
    return ring(angles.map { angle in
        let r = radius * Double.random(in: 0.2...1, using: &rng)
        let lon = min(180, max(-180, centre.0 + r * cos(angle)))
        let lat = min(89, max(-89, centre.1 + r * sin(angle) * 0.6))
        return (lon, lat)
    })
}

extension TileCover {
    /// Asserts the streaming invariants and returns the tiles: (y, x) order, no duplicates,
    /// spans ascending, disjoint and not adjacent, iteration length equal to `count`.
    func checkedTiles() -> (tiles: [TileID], problems: [String]) {
        var problems = [String]()
        let tiles = Array(self)
        for (a, b) in zip(tiles, tiles.dropFirst()) where !(a < b) {
            problems.append("\(a) is not before \(b)")
        }
        if tiles.count != count { problems.append("iterated \(tiles.count) tiles, count says \(count)") }
        for (a, b) in zip(Array(spans), Array(spans).dropFirst()) {
            if a.y > b.y || (a.y == b.y && a.xRange.upperBound + 1 >= b.xRange.lowerBound) {
                problems.append("spans \(a) and \(b) out of order or touching")
            }
        }
        return (tiles, problems)
    }
}
