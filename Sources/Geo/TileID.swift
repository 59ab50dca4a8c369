/// A tile of the Web Mercator XYZ grid (row 0 at the north edge), as MapLibre requests it.
public struct TileID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var z: Int
    public var x: Int
    public var y: Int

    public init(z: Int, x: Int, y: Int) {
        self.z = z
        self.x = x
        self.y = y
    }

    /// Ordered by zoom, then row, then column: the order a cover streams its tiles in.
    public static func < (lhs: TileID, rhs: TileID) -> Bool {
        (lhs.z, lhs.y, lhs.x) < (rhs.z, rhs.y, rhs.x)
    }

    public var description: String { "\(z)/\(x)/\(y)" }

    /// Bing Maps quadkey (`{quadkey}` in URL templates); empty at zoom 0, as Bing defines it.
    public var quadkey: String {
        var digits = [UInt8]()
        digits.reserveCapacity(max(z, 0))
        var level = z
        while level > 0 {
            let mask = 1 << (level - 1)
            var digit: UInt8 = 48 // "0"
            if x & mask != 0 { digit += 1 }
            if y & mask != 0 { digit += 2 }
            digits.append(digit)
            level -= 1
        }
        return String(decoding: digits, as: UTF8.self)
    }

    /// The tile's extent in EPSG:3857 metres (`{bbox-epsg-3857}` in WMS templates).
    public var epsg3857Bounds: (minX: Double, minY: Double, maxX: Double, maxY: Double) {
        let extent = WebMercator.earthCircumference / 2
        let size = WebMercator.earthCircumference / Double(sign: .plus, exponent: z, significand: 1)
        let minX = -extent + Double(x) * size
        let maxY = extent - Double(y) * size
        return (minX, maxY - size, minX + size, maxY)
    }

    /// The same tile addressed in the TMS scheme (row 0 at the south edge); an involution.
    public func flippedY() -> TileID {
        TileID(z: z, x: x, y: (1 << z) - 1 - y)
    }
}
