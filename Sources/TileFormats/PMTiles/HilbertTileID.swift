/// PMTiles v3 tile ids: every tile of every zoom on one Hilbert curve, zoom after zoom, so tiles
/// that are near on the map are near in the file (one range request serves a viewport) and
/// directories delta-encode to a few bits per tile.
public enum HilbertTileID {
    /// PMTiles ids stay below 2^64 up to zoom 31; packd never stores deeper tiles.
    public static let maximumZoom = 31

    /// The id of tile `z/x/y`, or nil when the coordinates are outside the zoom's grid.
    public static func encode(z: Int, x: Int, y: Int) -> UInt64? {
        guard z >= 0, z <= maximumZoom else { return nil }
        let side = UInt64(1) << UInt64(z)
        guard x >= 0, y >= 0, UInt64(x) < side, UInt64(y) < side else { return nil }
        var position = (x: UInt64(x), y: UInt64(y))
        var distance: UInt64 = 0
        var half = side >> 1
        while half > 0 {
            let rx: UInt64 = position.x & half > 0 ? 1 : 0
            let ry: UInt64 = position.y & half > 0 ? 1 : 0
            distance += half * half * ((3 * rx) ^ ry)
            // Reflecting across the whole grid (not just this quadrant) keeps the values unsigned;
            // the lower bits still read are the same either way.
            position = rotate(side, position, rx: rx, ry: ry)
            half >>= 1
        }
        return firstID(ofZoom: z) + distance
    }

    /// The tile an id names (the inverse of `encode`), or nil beyond `maximumZoom`.
    public static func decode(_ id: UInt64) -> (z: Int, x: Int, y: Int)? {
        var z = 0
        while z <= maximumZoom {
            let count = UInt64(1) << UInt64(2 * z)
            let first = firstID(ofZoom: z)
            if id - first < count {
                let (x, y) = position(onZoom: z, distance: id - first)
                return (z, Int(x), Int(y))
            }
            z += 1
        }
        return nil
    }

    /// How many tiles all zooms below `z` hold: (4^z - 1) / 3.
    public static func firstID(ofZoom z: Int) -> UInt64 {
        ((UInt64(1) << UInt64(2 * z)) - 1) / 3
    }

    private static func position(onZoom z: Int, distance: UInt64) -> (UInt64, UInt64) {
        let side = UInt64(1) << UInt64(z)
        var position: (x: UInt64, y: UInt64) = (0, 0)
        var t = distance
        var s: UInt64 = 1
        while s < side {
            let rx = 1 & (t / 2)
            let ry = 1 & (t ^ rx)
            position = rotate(s, position, rx: rx, ry: ry)
            position.x += s * rx
            position.y += s * ry
            t /= 4
            s *= 2
        }
        return (position.x, position.y)
    }

    private static func rotate(_ n: UInt64, _ p: (x: UInt64, y: UInt64), rx: UInt64, ry: UInt64) -> (x: UInt64, y: UInt64) {
        guard ry == 0 else { return p }
        var p = p
        if rx == 1 {
            p = (n - 1 - p.x, n - 1 - p.y)
        }
        return (p.y, p.x)
    }
}
