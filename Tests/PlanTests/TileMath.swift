import Foundation

/// An independent reference for box covers, straight from the slippy-map formulas, for boxes
/// whose edges avoid tile boundaries (so no edge rule is involved).
enum TileMath {
    static func column(longitude: Double, zoom: Int) -> Int {
        Int(((longitude + 180) / 360 * Double(1 << zoom)).rounded(.down))
    }

    static func row(latitude: Double, zoom: Int) -> Int {
        let radians = latitude * .pi / 180
        let y = (1 - log(tan(radians) + 1 / cos(radians)) / .pi) / 2
        return Int((y * Double(1 << zoom)).rounded(.down))
    }

    static func boxCount(west: Double, south: Double, east: Double, north: Double, zoom: Int) -> Int {
        let columns = column(longitude: east, zoom: zoom) - column(longitude: west, zoom: zoom) + 1
        let rows = row(latitude: south, zoom: zoom) - row(latitude: north, zoom: zoom) + 1
        return columns * rows
    }

    static func boxCount(west: Double, south: Double, east: Double, north: Double, zooms: ClosedRange<Int>) -> Int {
        zooms.reduce(0) { $0 + boxCount(west: west, south: south, east: east, north: north, zoom: $1) }
    }
}
