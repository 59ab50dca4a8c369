@testable import Geo

/// The cover rule checked tile by tile, the slow obvious way, as the oracle for `TileCover`:
/// every tile of the zoom is tested against the shape with exact square intersection (an edge
/// through the open square, or else the square's centre inside under non-zero winding with
/// holes excluded; lines and points against the half-open square the tile owns).
enum ReferenceCover {
    typealias P = (x: Double, y: Double)

    static func tiles(_ region: TileRegion, zoom: Int) -> Set<TileID> {
        let n = 1 << zoom
        var result = Set<TileID>()
        for y in 0..<n {
            for x in 0..<n where contains(region, x: x, y: y, n: n) {
                result.insert(TileID(z: zoom, x: x, y: y))
            }
        }
        return result
    }

    static func contains(_ region: TileRegion, x: Int, y: Int, n: Int) -> Bool {
        switch region {
        case .bounds(let b):
            let parts = b.west > b.east
                ? [(b.west, 180.0), (-180.0, b.east)]
                : [(b.west, b.east)]
            return parts.contains { west, east in
                let ring = [LngLat(longitude: west, latitude: b.south), LngLat(longitude: east, latitude: b.south),
                            LngLat(longitude: east, latitude: b.north), LngLat(longitude: west, latitude: b.north),
                            LngLat(longitude: west, latitude: b.south)]
                if west == east || b.south == b.north {
                    return contains(.geometry(.lineString(ring)), x: x, y: y, n: n)
                }
                return contains(.geometry(.polygon([ring])), x: x, y: y, n: n)
            }
        case .geometry(let geometry):
            return contains(geometry, x: Double(x), y: Double(y), n: Double(n))
        }
    }

    private static func project(_ p: LngLat, _ n: Double) -> P {
        let unit = WebMercator.project(p)
        return (unit.x * n, unit.y * n)
    }

    private static func contains(_ geometry: Geometry, x: Double, y: Double, n: Double) -> Bool {
        switch geometry {
        case .point(let p):
            return owns(project(p, n), x: x, y: y, n: n)
        case .multiPoint(let ps):
            return ps.contains { owns(project($0, n), x: x, y: y, n: n) }
        case .lineString(let line):
            return lineMeets(line.map { project($0, n) }, x: x, y: y, n: n)
        case .multiLineString(let lines):
            return lines.contains { lineMeets($0.map { project($0, n) }, x: x, y: y, n: n) }
        case .polygon(let rings):
            return polygonMeets(rings.map { $0.map { project($0, n) } }, x: x, y: y)
        case .multiPolygon(let polygons):
            return polygons.contains { polygonMeets($0.map { $0.map { project($0, n) } }, x: x, y: y) }
        case .geometryCollection(let members):
            return members.contains { contains($0, x: x, y: y, n: n) }
        }
    }

    /// Tile [x, x+1) × [y, y+1) owns p; the last column and row also own the far edge.
    private static func owns(_ p: P, x: Double, y: Double, n: Double) -> Bool {
        let inX = p.x >= x && (p.x < x + 1 || (x + 1 == n && p.x == n))
        let inY = p.y >= y && (p.y < y + 1 || (y + 1 == n && p.y == n))
        return inX && inY
    }

    private static func lineMeets(_ line: [P], x: Double, y: Double, n: Double) -> Bool {
        zip(line, line.dropFirst()).contains { segmentMeetsOwnedSquare($0, $1, x: x, y: y, n: n) }
    }

    /// Clips the segment to the closed square; the owned part is non-empty unless the clipped
    /// piece is a single point on a non-owned edge or lies along a non-owned edge.
    private static func segmentMeetsOwnedSquare(_ a: P, _ b: P, x: Double, y: Double, n: Double) -> Bool {
        guard let (t0, t1) = clip(a, b, x: x, y: y, openSides: false) else { return false }
        let p0 = point(a, b, t0), p1 = point(a, b, t1)
        if t0 == t1 || p0 == p1 { return owns(p0, x: x, y: y, n: n) }
        let eastOwned = x + 1 == n, southOwned = y + 1 == n
        if a.x == b.x, a.x == x + 1, !eastOwned { return false }
        if a.y == b.y, a.y == y + 1, !southOwned { return false }
        return true
    }

    private static func point(_ a: P, _ b: P, _ t: Double) -> P {
        if t == 0 { return a }
        if t == 1 { return b }
        return (a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t)
    }

    /// Liang–Barsky against [x, x+1] × [y, y+1]; with `openSides`, the open square instead.
    private static func clip(_ a: P, _ b: P, x: Double, y: Double, openSides: Bool) -> (Double, Double)? {
        var low = 0.0, high = 1.0
        var lowOpen = false, highOpen = false
        for (start, delta, min, max) in [(a.x, b.x - a.x, x, x + 1), (a.y, b.y - a.y, y, y + 1)] {
            if delta == 0 {
                if openSides ? (start <= min || start >= max) : (start < min || start > max) { return nil }
                continue
            }
            var t0 = (min - start) / delta, t1 = (max - start) / delta
            if t0 > t1 { swap(&t0, &t1) }
            if t0 > low || (openSides && t0 == low) { low = t0; lowOpen = openSides }
            if t1 < high || (openSides && t1 == high) { high = t1; highOpen = openSides }
        }
        if low > high || (low == high && (lowOpen || highOpen)) { return nil }
        return (low, high)
    }

    private static func polygonMeets(_ rings: [[P]], x: Double, y: Double) -> Bool {
        for ring in rings {
            for (a, b) in zip(ring, ring.dropFirst()) where clip(a, b, x: x, y: y, openSides: true) != nil {
                return true
            }
        }
        // No boundary inside the open square: it is wholly in or out; ask its centre.
        let centre = (x: x + 0.5, y: y + 0.5)
        guard winding(rings[0], around: centre) != 0 else { return false }
        return rings.dropFirst().allSatisfy { winding($0, around: centre) == 0 }
    }

    private static func winding(_ ring: [P], around p: P) -> Int {
        var winding = 0
        for (a, b) in zip(ring, ring.dropFirst()) {
            let side = (b.x - a.x) * (p.y - a.y) - (p.x - a.x) * (b.y - a.y)
            if a.y <= p.y {
                if b.y > p.y, side > 0 { winding += 1 }
            } else if b.y <= p.y, side < 0 {
                winding -= 1
            }
        }
        return winding
    }
}
