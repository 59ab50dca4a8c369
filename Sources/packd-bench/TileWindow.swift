import ArgumentParser
import Foundation
import Geo

/// A rectangle of `width` × `height` tiles at one zoom and a bounding box whose cover is exactly
/// those tiles (its edges sit a quarter tile inside the rectangle's), so a benchmark can post a
/// region to packd and give curl the very same URLs.
struct TileWindow {
    let zoom: Int
    let xRange: ClosedRange<Int>
    let yRange: ClosedRange<Int>
    let bounds: LngLatBounds

    /// A window of exactly `tiles` tiles near (0°, 0°), as square as `tiles`' divisors allow.
    init(tiles: Int, zoom: Int) throws {
        let side = 1 << zoom
        var width = Int(Double(tiles).squareRoot())
        while width > 1 && tiles % width != 0 { width -= 1 }
        let height = tiles / width
        guard tiles > 0, width <= side / 2, height <= side / 2 else {
            throw ValidationError("\(tiles) tiles do not fit a window at zoom \(zoom)")
        }
        self.zoom = zoom
        xRange = (side / 2)...(side / 2 + width - 1)
        yRange = (side / 2 - height)...(side / 2 - 1)
        func longitude(_ x: Double) -> Double { x / Double(side) * 360 - 180 }
        func latitude(_ y: Double) -> Double { atan(sinh(Double.pi * (1 - 2 * y / Double(side)))) * 180 / Double.pi }
        bounds = try LngLatBounds(west: longitude(Double(xRange.lowerBound) + 0.25), south: latitude(Double(yRange.upperBound) + 0.75),
                                  east: longitude(Double(xRange.upperBound) + 0.75), north: latitude(Double(yRange.lowerBound) + 0.25))
        let cover = TileCover(region: .bounds(bounds), zoom: zoom)
        guard cover.count == tiles else {
            throw ValidationError("the window's cover has \(cover.count) tiles, not \(tiles)")
        }
    }

    /// Every tile's URL for `template` (`{z}/{x}/{y}`), in the cover's order.
    func urls(template: String) -> [String] {
        TileCover(region: .bounds(bounds), zoom: zoom).map {
            template.replacingOccurrences(of: "{z}", with: "\($0.z)").replacingOccurrences(of: "{x}", with: "\($0.x)")
                .replacingOccurrences(of: "{y}", with: "\($0.y)")
        }
    }
}
