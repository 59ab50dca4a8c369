/// A pack's `progress` as the API shows it and its `progress` events carry it (openapi's
/// `Progress`): durable counts, the plan's expected count, and — while downloading — the rolling
/// rate, the transfers in flight and what holds them back.
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
    /// The pack's requests under way to upstreams now; 0 when it is not downloading.
    public var transfersInFlight: Int64
    /// nil unless an upstream is pausing or slowing the pack down.
    public var throttled: PackThrottle?
    /// Range requests made to PMTiles archives and the bytes they brought (0 for other packs).
    public var archiveRequests: Int64
    public var archiveBytes: Int64

    public init(completedResources: Int64 = 0, completedBytes: Int64 = 0, completedTiles: Int64 = 0,
                completedTileBytes: Int64 = 0, expectedResources: Int64 = 0, expectedIsPrecise: Bool = false,
                failedResources: Int64 = 0, bytesPerSecond: Int64? = nil, etaSeconds: Int64? = nil,
                transfersInFlight: Int64 = 0, throttled: PackThrottle? = nil, archiveRequests: Int64 = 0,
                archiveBytes: Int64 = 0) {
        self.archiveRequests = archiveRequests
        self.archiveBytes = archiveBytes
        self.completedResources = completedResources
        self.completedBytes = completedBytes
        self.completedTiles = completedTiles
        self.completedTileBytes = completedTileBytes
        self.expectedResources = expectedResources
        self.expectedIsPrecise = expectedIsPrecise
        self.failedResources = failedResources
        self.bytesPerSecond = bytesPerSecond
        self.etaSeconds = etaSeconds
        self.transfersInFlight = transfersInFlight
        self.throttled = throttled
    }

    /// The stored counts with what the plan expects (`expected` nil: not known yet).
    public init(_ stored: StoredProgress, expected: ExpectedCounts?, bytesPerSecond: Int64? = nil, etaSeconds: Int64? = nil) {
        self.init(completedResources: stored.completedResources, completedBytes: stored.completedBytes,
                  completedTiles: stored.completedTiles, completedTileBytes: stored.completedTileBytes,
                  expectedResources: max(expected?.resources ?? 0, 0), expectedIsPrecise: expected?.precise ?? false,
                  failedResources: stored.failedResources, bytesPerSecond: bytesPerSecond, etaSeconds: etaSeconds,
                  archiveRequests: stored.archiveRequests, archiveBytes: stored.archiveBytes)
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
        case transfersInFlight = "transfers_in_flight"
        case throttled
        case archiveRequests = "archive_requests"
        case archiveBytes = "archive_bytes"
    }

    /// Documents and events written before archive sources existed have no archive counts: 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        completedResources = try container.decode(Int64.self, forKey: .completedResources)
        completedBytes = try container.decode(Int64.self, forKey: .completedBytes)
        completedTiles = try container.decode(Int64.self, forKey: .completedTiles)
        completedTileBytes = try container.decode(Int64.self, forKey: .completedTileBytes)
        expectedResources = try container.decode(Int64.self, forKey: .expectedResources)
        expectedIsPrecise = try container.decode(Bool.self, forKey: .expectedIsPrecise)
        failedResources = try container.decode(Int64.self, forKey: .failedResources)
        bytesPerSecond = try container.decodeIfPresent(Int64.self, forKey: .bytesPerSecond)
        etaSeconds = try container.decodeIfPresent(Int64.self, forKey: .etaSeconds)
        transfersInFlight = try container.decode(Int64.self, forKey: .transfersInFlight)
        throttled = try container.decodeIfPresent(PackThrottle.self, forKey: .throttled)
        archiveRequests = try container.decodeIfPresent(Int64.self, forKey: .archiveRequests) ?? 0
        archiveBytes = try container.decodeIfPresent(Int64.self, forKey: .archiveBytes) ?? 0
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
        try container.encode(transfersInFlight, forKey: .transfersInFlight)
        try container.encode(throttled, forKey: .throttled)
        try container.encode(archiveRequests, forKey: .archiveRequests)
        try container.encode(archiveBytes, forKey: .archiveBytes)
    }
}
