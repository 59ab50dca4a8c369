import Foundation
import Geo

/// The claim order of a pack with a start area: the fixed resources first, then the units
/// nearest the start area's centre — the distance from the centre to the nearest point of the
/// unit's window, in metres at the centre's latitude, on the map without wrapping round the
/// antimeridian (as `NearestFirstWalk` measures tiles); a unit of whole zooms (the low zooms,
/// few tiles) counts as at the centre. Ties by ordinal. The SQL that claims
/// (`WorkUnitLeases.claim`) computes the same distance from these numbers.
public struct StartAreaClaimOrder: Hashable, Sendable {
    /// The centre in the unit square (x east, y south).
    public let centerX: Double
    public let centerY: Double
    /// Metres a unit of the square spans at the centre's latitude.
    public let metresPerUnit: Double
    public let radiusMetres: Double

    public init(longitude: Double, latitude: Double, radiusMetres: Double) {
        let projected = WebMercator.project(LngLat(longitude: longitude, latitude: latitude))
        centerX = projected.x
        centerY = projected.y
        let clamped = min(max(latitude, -WebMercator.maxLatitude), WebMercator.maxLatitude)
        metresPerUnit = WebMercator.earthCircumference * cos(clamped * .pi / 180)
        self.radiusMetres = radiusMetres
    }

    /// How far the unit is from the centre, in metres: -1 for the fixed resources (claimed
    /// first), 0 for whole zooms, infinity for a glyph choice (it waits for every other unit).
    public func distance(to scope: WorkUnit.Scope) -> Double {
        switch scope {
        case .resources, .fixed: return -1
        case .zooms: return 0
        case .glyphChoice: return .infinity
        case .window(_, let zoom, let rows, let columns):
            let scale = Double(sign: .plus, exponent: zoom, significand: 1)
            let dx = max(Double(columns.lowerBound) / scale - centerX, 0, centerX - Double(columns.upperBound + 1) / scale)
            let dy = max(Double(rows.lowerBound) / scale - centerY, 0, centerY - Double(rows.upperBound + 1) / scale)
            return (dx * dx + dy * dy).squareRoot() * metresPerUnit
        }
    }
}
