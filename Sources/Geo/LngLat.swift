/// A WGS 84 position in degrees. Not validated here: `Geometry` and `LngLatBounds` validate the
/// positions they accept, so a bare `LngLat` is only trusted once it is part of one of those.
public struct LngLat: Hashable, Sendable {
    public var longitude: Double
    public var latitude: Double

    public init(longitude: Double, latitude: Double) {
        self.longitude = longitude
        self.latitude = latitude
    }
}
