/// A pack as `GET /v1/packs/{id}` shows it (openapi's `Pack`). The API encodes it, the CLI, the
/// benchmarks and the tests decode it: there is no other description of this JSON in Swift.
public struct Pack: Sendable, Equatable, Codable {
    public var id: Int64
    public var name: String?
    /// The region as posted, normalised.
    public var region: Region
    /// The client's opaque bytes.
    public var context: Base64Bytes?
    public var state: PackState
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// When the pack last became `complete`.
    public var completedAt: Timestamp?
    public var progress: PackProgress
    public var limits: PackLimits
    /// Why the pack failed; nil unless `state` is `failed`.
    public var error: PackError?
    /// The last `check-update`'s answer; nil before the first.
    public var updateAvailable: Bool?
    /// The last revalidation; nil before the first.
    public var invalidation: InvalidationResult?
    /// The current version: 0 until the pack first completed (`GET /v1/packs/{id}/versions`).
    public var version: Int64
    /// The scheduled refresh; nil: none.
    public var refresh: PackRefresh?
    /// When the scheduled refresh is next due; nil without one.
    public var nextRefreshAt: Timestamp?
    /// Where the pack downloads first; nil: zoom by zoom.
    public var startArea: StartArea?
    /// When every tile of the start area was durably stored; nil until then (or without one).
    public var startAreaReadyAt: Timestamp?
    /// With `"glyphs": "region"`, once its labels' ranges are chosen: the ranges left out.
    public var skippedGlyphRanges: SkippedGlyphRanges?

    public init(id: Int64, name: String?, region: Region, context: Base64Bytes?, state: PackState, createdAt: Timestamp,
                updatedAt: Timestamp, completedAt: Timestamp?, progress: PackProgress, limits: PackLimits, error: PackError?,
                updateAvailable: Bool?, invalidation: InvalidationResult?, version: Int64 = 0, refresh: PackRefresh? = nil,
                nextRefreshAt: Timestamp? = nil, startArea: StartArea? = nil, startAreaReadyAt: Timestamp? = nil,
                skippedGlyphRanges: SkippedGlyphRanges? = nil) {
        self.id = id
        self.name = name
        self.region = region
        self.context = context
        self.state = state
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.completedAt = completedAt
        self.progress = progress
        self.limits = limits
        self.error = error
        self.updateAvailable = updateAvailable
        self.invalidation = invalidation
        self.version = version
        self.refresh = refresh
        self.nextRefreshAt = nextRefreshAt
        self.startArea = startArea
        self.startAreaReadyAt = startAreaReadyAt
        self.skippedGlyphRanges = skippedGlyphRanges
    }

    private enum CodingKeys: String, CodingKey {
        case id, name, region, context, state, progress, limits, error, invalidation, version, refresh
        case nextRefreshAt = "next_refresh_at"
        case startArea = "start_area"
        case startAreaReadyAt = "start_area_ready_at"
        case skippedGlyphRanges = "skipped_glyph_ranges"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case completedAt = "completed_at"
        case updateAvailable = "update_available"
    }

    /// Every field is written, `null` included: the schema requires them all.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(region, forKey: .region)
        try container.encode(context, forKey: .context)
        try container.encode(state, forKey: .state)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(completedAt, forKey: .completedAt)
        try container.encode(progress, forKey: .progress)
        try container.encode(limits, forKey: .limits)
        try container.encode(error, forKey: .error)
        try container.encode(updateAvailable, forKey: .updateAvailable)
        try container.encode(invalidation, forKey: .invalidation)
        try container.encode(version, forKey: .version)
        try container.encode(refresh, forKey: .refresh)
        try container.encode(nextRefreshAt, forKey: .nextRefreshAt)
        try container.encode(startArea, forKey: .startArea)
        try container.encode(startAreaReadyAt, forKey: .startAreaReadyAt)
        try container.encode(skippedGlyphRanges, forKey: .skippedGlyphRanges)
    }
}

/// A pack's scheduled refresh (`"refresh": {"every": "P7D"}` on create and `PATCH`): revalidated
/// every `every` (an ISO 8601 duration of at least an hour), jittered.
public struct PackRefresh: Sendable, Equatable, Hashable, Codable {
    public var every: String

    public init(every: String) {
        self.every = every
    }
}

/// `GET /v1/packs`: a page of packs in creation order and the path of the next page.
public struct PackList: Sendable, Equatable, Codable {
    public var packs: [Pack]
    /// nil on the last page.
    public var next: String?

    public init(packs: [Pack], next: String?) {
        self.packs = packs
        self.next = next
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(packs, forKey: .packs)
        try container.encode(next, forKey: .next)
    }

    private enum CodingKeys: String, CodingKey { case packs, next }
}

/// A pack's own limits (`limits` of `POST /v1/packs`).
public struct PackLimits: Sendable, Equatable, Hashable, Codable {
    /// The most tiles this pack may download.
    public var maxTiles: Int64?
    /// A rolling-average bandwidth cap.
    public var maxBytesPerSecond: Int64?

    public init(maxTiles: Int64? = nil, maxBytesPerSecond: Int64? = nil) {
        self.maxTiles = maxTiles
        self.maxBytesPerSecond = maxBytesPerSecond
    }

    private enum CodingKeys: String, CodingKey {
        case maxTiles = "max_tiles"
        case maxBytesPerSecond = "max_bytes_per_second"
    }

    /// Both fields, `null` when unset.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(maxTiles, forKey: .maxTiles)
        try container.encode(maxBytesPerSecond, forKey: .maxBytesPerSecond)
    }
}

/// The counts of a revalidation (openapi's `InvalidateResult`).
public struct InvalidationResult: Sendable, Equatable, Codable {
    public var unchanged: Int64
    public var updated: Int64
    public var removed: Int64
    public var startedAt: Timestamp
    /// nil while revalidating.
    public var completedAt: Timestamp?

    public init(_ invalidation: PackInvalidation) {
        unchanged = invalidation.unchanged
        updated = invalidation.updated
        removed = invalidation.removed
        startedAt = Timestamp(invalidation.startedAt)
        completedAt = invalidation.completedAt.map(Timestamp.init)
    }

    private enum CodingKeys: String, CodingKey {
        case unchanged, updated, removed
        case startedAt = "started_at"
        case completedAt = "completed_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(unchanged, forKey: .unchanged)
        try container.encode(updated, forKey: .updated)
        try container.encode(removed, forKey: .removed)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(completedAt, forKey: .completedAt)
    }
}

/// Bytes written as base64 (RFC 4648, with padding), e.g. a pack's `context`.
public struct Base64Bytes: Sendable, Hashable, Codable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let bytes = Base64.decode(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not base64")
        }
        self.bytes = bytes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Base64.encode(bytes))
    }
}
