/// A pack as a store keeps it: MapLibre's region (definition + description) plus packd's own
/// columns (state, name, error, limits, expected counts, update check, last revalidation).
public struct PackRecord: Sendable, Equatable, Codable {
    public var id: Int64
    public var name: String
    public var state: PackState
    /// Why the pack failed (set with `failed`).
    public var error: PackError?
    /// The client's opaque context; also the MapLibre region `description`.
    public var context: [UInt8]?
    /// MapLibre's region definition JSON (style URL, bounds, zooms, pixel ratio).
    public var definition: String
    public var createdAt: Int64
    public var updatedAt: Int64
    public var completedAt: Int64?
    public var limits: PackLimits
    public var expectedResources: Int64
    public var expectedTiles: Int64
    public var expectedIsPrecise: Bool
    public var updateAvailable: Bool
    /// When `check-update` last set `updateAvailable`; nil: never checked.
    public var updateCheckedAt: Int64?
    /// The last `invalidate` of the pack; nil: never revalidated.
    public var invalidation: PackInvalidation?
    /// The pack's current version (`PackVersion`): 0 until it first completed.
    public var version: Int64
    /// The scheduled refresh's interval as an ISO 8601 duration (`P7D`); nil: none.
    public var refreshEvery: String?
    /// When the scheduled refresh is next due (Unix seconds); nil without a schedule.
    public var nextRefreshAt: Int64?
    /// Where to download first; nil: zoom by zoom.
    public var startArea: StartArea?
    /// When every tile of the start area was first durably stored.
    public var startAreaReadyAt: Int64?
    /// With `"glyphs": "region"`, once chosen: the glyph ranges left out.
    public var skippedGlyphRanges: SkippedGlyphRanges?

    public init(id: Int64 = 0, name: String, state: PackState, error: PackError? = nil, context: [UInt8]? = nil,
                definition: String, createdAt: Int64 = 0, updatedAt: Int64 = 0, completedAt: Int64? = nil,
                limits: PackLimits = PackLimits(), expectedResources: Int64 = 0, expectedTiles: Int64 = 0,
                expectedIsPrecise: Bool = false, updateAvailable: Bool = false,
                updateCheckedAt: Int64? = nil, invalidation: PackInvalidation? = nil, version: Int64 = 0,
                refreshEvery: String? = nil, nextRefreshAt: Int64? = nil, startArea: StartArea? = nil,
                startAreaReadyAt: Int64? = nil, skippedGlyphRanges: SkippedGlyphRanges? = nil) {
        self.id = id
        self.name = name
        self.state = state
        self.error = error
        self.context = context
        self.definition = definition
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.completedAt = completedAt
        self.limits = limits
        self.expectedResources = expectedResources
        self.expectedTiles = expectedTiles
        self.expectedIsPrecise = expectedIsPrecise
        self.updateAvailable = updateAvailable
        self.updateCheckedAt = updateCheckedAt
        self.invalidation = invalidation
        self.version = version
        self.refreshEvery = refreshEvery
        self.nextRefreshAt = nextRefreshAt
        self.startArea = startArea
        self.startAreaReadyAt = startAreaReadyAt
        self.skippedGlyphRanges = skippedGlyphRanges
    }

    /// The expected counts as stored (not precise until the plan was known).
    public var expected: ExpectedCounts {
        ExpectedCounts(resources: expectedResources, tiles: expectedTiles, precise: expectedIsPrecise)
    }

    /// The pack's own `max_tiles`.
    public var maxTiles: Int64? { limits.maxTiles }
    /// The pack's `max_bytes_per_second`, nil when unset or below 1.
    public var maxBytesPerSecond: Int64? { limits.maxBytesPerSecond.flatMap { $0 >= 1 ? $0 : nil } }
}
