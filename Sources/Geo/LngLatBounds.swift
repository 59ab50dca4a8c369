/// A `[west, south, east, north]` box in degrees (RFC 7946 order). `west > east` means the box
/// crosses the antimeridian; that is how a user asks for "Fiji", so it is not an error.
public struct LngLatBounds: Hashable, Sendable {
    public let west: Double
    public let south: Double
    public let east: Double
    public let north: Double

    public static let world = LngLatBounds(uncheckedWest: -180, south: -90, east: 180, north: 90)

    /// Rejects non-finite values, longitudes outside ±180, latitudes outside ±90 and
    /// `south > north`. A zero-width or zero-height box is accepted: it covers like a line.
    public init(west: Double, south: Double, east: Double, north: Double) throws(GeoError) {
        for (index, value) in [west, south, east, north].enumerated() where !value.isFinite {
            throw GeoError(pointer: "/\(index)", detail: "must be a finite number, got \(value)")
        }
        for (index, value) in [(0, west), (2, east)] where abs(value) > 180 {
            throw GeoError(pointer: "/\(index)", detail: "longitude \(value) is outside -180…180")
        }
        for (index, value) in [(1, south), (3, north)] where abs(value) > 90 {
            throw GeoError(pointer: "/\(index)", detail: "latitude \(value) is outside -90…90")
        }
        guard south <= north else {
            throw GeoError(pointer: "/1", detail: "south \(south) is north of north \(north)")
        }
        self.init(uncheckedWest: west, south: south, east: east, north: north)
    }

    /// Decodes the JSON array form `[west, south, east, north]` of api.md.
    public init(geoJSON object: Any, pointer: String = "") throws(GeoError) {
        guard let array = object as? [Any] else {
            throw GeoError(pointer: pointer, detail: "bounds must be an array [west, south, east, north]")
        }
        guard array.count == 4 else {
            throw GeoError(pointer: pointer, detail: "bounds must have 4 numbers, got \(array.count)")
        }
        var values = [Double]()
        for (index, element) in array.enumerated() {
            guard let number = JSONNumber.double(element) else {
                throw GeoError(pointer: "\(pointer)/\(index)", detail: "must be a number")
            }
            values.append(number)
        }
        do {
            try self.init(west: values[0], south: values[1], east: values[2], north: values[3])
        } catch {
            throw GeoError(pointer: pointer + error.pointer, detail: error.detail)
        }
    }

    init(uncheckedWest west: Double, south: Double, east: Double, north: Double) {
        self.west = west
        self.south = south
        self.east = east
        self.north = north
    }

    public var crossesAntimeridian: Bool { west > east }

    /// The JSON array form, `[west, south, east, north]`.
    public var geoJSONObject: [Double] { [west, south, east, north] }
}
