import Foundation

/// Spherical Web Mercator (EPSG:3857) as MapLibre tiles it: positions project into the unit
/// square, row 0 at the north edge. Tile coordinates at zoom z are unit coordinates times 2^z,
/// a multiplication by a power of two and therefore exact, so one projection serves every zoom.
public enum WebMercator {
    /// The latitude where the projected map is square; positions beyond it are clamped.
    public static let maxLatitude = 85.051128779806604
    public static let maxZoom = 30
    public static let earthCircumference = 2 * Double.pi * 6_378_137

    /// The unit-square position (x east, y south) of a longitude/latitude, latitude clamped.
    public static func project(_ position: LngLat) -> (x: Double, y: Double) {
        (projectX(longitude: position.longitude), projectY(latitude: position.latitude))
    }

    static func projectX(longitude: Double) -> Double {
        (longitude + 180) / 360
    }

    static func projectY(latitude: Double) -> Double {
        let clamped = min(max(latitude, -maxLatitude), maxLatitude)
        let sine = sin(clamped * .pi / 180)
        let y = 0.5 - 0.25 * log((1 + sine) / (1 - sine)) / .pi
        return min(max(y, 0), 1)
    }

    /// 2^z as a Double, exactly.
    static func scale(zoom: Int) -> Double {
        Double(sign: .plus, exponent: zoom, significand: 1)
    }

    /// Tiles in the covers of `zooms` (clamped to 0…30), optionally clipped to `within`.
    ///
    /// The sum fits `Int` (64-bit): the whole world over z0–30 is (4^31 − 1) / 3 ≈ 1.43 × 10^18
    /// tiles, below Int64.max ≈ 9.22 × 10^18. Bounds counts are closed-form per zoom; geometry
    /// counts sweep each zoom's rows once (O(rows × active edges)), never listing tiles.
    public static func tileCount(region: TileRegion, zooms: ClosedRange<Int>, within clip: LngLatBounds? = nil) -> Int {
        tileCount(region: region, zooms: zooms, within: clip, limit: .max) ?? .max
    }

    /// The same sum, or nil as soon as it exceeds `limit`, so checking a request against a tile
    /// limit costs O(limit) rows at worst however deep its zooms go.
    public static func tileCount(region: TileRegion, zooms: ClosedRange<Int>, within clip: LngLatBounds? = nil, limit: Int) -> Int? {
        let lower = min(max(zooms.lowerBound, 0), maxZoom)
        let upper = min(max(zooms.upperBound, 0), maxZoom)
        let shape = PreparedRegion(region)
        var total = 0
        for zoom in lower...upper {
            guard let count = TileCover(prepared: shape, zoom: zoom, within: clip).count(limit: limit - total) else {
                return nil
            }
            total += count
        }
        return total
    }
}
