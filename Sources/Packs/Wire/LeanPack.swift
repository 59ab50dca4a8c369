/// `start_area` of `POST /v1/packs` and of a pack: the place to download first — every tile of
/// every zoom within `radius_m` of `center` before any tile farther than twice that.
public struct StartArea: Sendable, Equatable, Hashable, Codable {
    /// The largest radius accepted (a start area is a neighbourhood, not a country).
    public static let maximumRadius = 100_000.0
    public static let defaultRadius = 5_000.0

    /// `[longitude, latitude]` in degrees.
    public var center: [Double]
    /// Metres on the ground.
    public var radiusM: Double

    public init(longitude: Double, latitude: Double, radiusM: Double = StartArea.defaultRadius) {
        center = [longitude, latitude]
        self.radiusM = radiusM
    }

    public var longitude: Double { center.first ?? 0 }
    public var latitude: Double { center.count > 1 ? center[1] : 0 }

    private enum CodingKeys: String, CodingKey {
        case center
        case radiusM = "radius_m"
    }

    /// `radius_m` may be left out (`defaultRadius`), but not given as null: it is a number.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        center = try container.decode([Double].self, forKey: .center)
        radiusM = container.contains(.radiusM) ? try container.decode(Double.self, forKey: .radiusM) : Self.defaultRadius
    }
}

/// `skipped_glyph_ranges` of a pack with `"glyphs": "region"`: the glyph ranges of its font
/// stacks its labels cannot draw, so not downloaded, and their bytes where packd knows them
/// (stored for another pack or in the ambient cache).
public struct SkippedGlyphRanges: Sendable, Equatable, Codable {
    public var ranges: Int64
    /// The stored bytes of the skipped ranges packd holds elsewhere; nil when it holds none.
    public var bytes: Int64?
    /// How many of the skipped ranges `bytes` covers.
    public var rangesWithKnownBytes: Int64

    public init(ranges: Int64, bytes: Int64?, rangesWithKnownBytes: Int64) {
        self.ranges = ranges
        self.bytes = bytes
        self.rangesWithKnownBytes = rangesWithKnownBytes
    }

    private enum CodingKeys: String, CodingKey {
        case ranges, bytes
        case rangesWithKnownBytes = "ranges_with_known_bytes"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ranges, forKey: .ranges)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(rangesWithKnownBytes, forKey: .rangesWithKnownBytes)
    }
}
