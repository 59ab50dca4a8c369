/// A pack's `progress` as the API shows it and its `progress` events carry it (openapi's
/// `Progress`): durable counts, the plan's expected count, and the rolling rate while downloading.
public struct PackProgress: Sendable, Equatable, Codable {
    public var completedResources: Int64
    public var completedBytes: Int64
    public var completedTiles: Int64
    public var completedTileBytes: Int64
    /// 0 until the plan is known (or a template region's count at creation).
    public var expectedResources: Int64
    public var expectedIsPrecise: Bool
    public var failedResources: Int64
    /// nil when the pack is not downloading or no rate is known yet.
    public var bytesPerSecond: Int64?
    /// nil when not downloading, while the count is not precise, or when no rate is known.
    public var etaSeconds: Int64?

    public init(completedResources: Int64 = 0, completedBytes: Int64 = 0, completedTiles: Int64 = 0,
                completedTileBytes: Int64 = 0, expectedResources: Int64 = 0, expectedIsPrecise: Bool = false,
                failedResources: Int64 = 0, bytesPerSecond: Int64? = nil, etaSeconds: Int64? = nil) {
        self.completedResources = completedResources
        self.completedBytes = completedBytes
        self.completedTiles = completedTiles
        self.completedTileBytes = completedTileBytes
        self.expectedResources = expectedResources
        self.expectedIsPrecise = expectedIsPrecise
        self.failedResources = failedResources
        self.bytesPerSecond = bytesPerSecond
        self.etaSeconds = etaSeconds
    }

    /// The stored counts with what the plan expects (`expected` nil: not known yet).
    public init(_ stored: StoredProgress, expected: ExpectedCounts?, bytesPerSecond: Int64? = nil, etaSeconds: Int64? = nil) {
        self.init(completedResources: stored.completedResources, completedBytes: stored.completedBytes,
                  completedTiles: stored.completedTiles, completedTileBytes: stored.completedTileBytes,
                  expectedResources: max(expected?.resources ?? 0, 0), expectedIsPrecise: expected?.precise ?? false,
                  failedResources: stored.failedResources, bytesPerSecond: bytesPerSecond, etaSeconds: etaSeconds)
    }

    /// Whether every expected resource is stored (and the count is exact).
    public var isComplete: Bool { expectedIsPrecise && completedResources >= expectedResources }

    private enum CodingKeys: String, CodingKey {
        case completedResources = "completed_resources"
        case completedBytes = "completed_bytes"
        case completedTiles = "completed_tiles"
        case completedTileBytes = "completed_tile_bytes"
        case expectedResources = "expected_resources"
        case expectedIsPrecise = "expected_is_precise"
        case failedResources = "failed_resources"
        case bytesPerSecond = "bytes_per_second"
        case etaSeconds = "eta_seconds"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(completedResources, forKey: .completedResources)
        try container.encode(completedBytes, forKey: .completedBytes)
        try container.encode(completedTiles, forKey: .completedTiles)
        try container.encode(completedTileBytes, forKey: .completedTileBytes)
        try container.encode(expectedResources, forKey: .expectedResources)
        try container.encode(expectedIsPrecise, forKey: .expectedIsPrecise)
        try container.encode(failedResources, forKey: .failedResources)
        try container.encode(bytesPerSecond, forKey: .bytesPerSecond)
        try container.encode(etaSeconds, forKey: .etaSeconds)
    }
}
