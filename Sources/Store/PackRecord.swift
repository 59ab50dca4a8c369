/// A pack as packd stores it: the MapLibre region (definition + description) plus packd's
/// columns in `packd_packs`.
public struct PackRecord: Sendable, Equatable {
    public var id: Int64
    public var name: String
    public var state: String
    /// `{code, detail, url?, status?}` as JSON text when the pack failed.
    public var errorJSON: String?
    /// The client's opaque context; also the MapLibre region `description`.
    public var context: [UInt8]?
    /// MapLibre's region definition JSON (style URL, bounds, zooms, pixel ratio).
    public var definition: String
    public var createdAt: Int64
    public var updatedAt: Int64
    public var completedAt: Int64?
    public var limitsJSON: String?
    public var expectedResources: Int64
    public var expectedTiles: Int64
    public var expectedIsPrecise: Bool
    public var updateAvailable: Bool
    /// When `check-update` last set `updateAvailable`; nil: never checked.
    public var updateCheckedAt: Int64?
    /// The last `invalidate` of the pack; nil: never revalidated.
    public var invalidation: PackInvalidation?

    public init(id: Int64 = 0, name: String, state: String, errorJSON: String? = nil, context: [UInt8]? = nil,
                definition: String, createdAt: Int64 = 0, updatedAt: Int64 = 0, completedAt: Int64? = nil,
                limitsJSON: String? = nil, expectedResources: Int64 = 0, expectedTiles: Int64 = 0,
                expectedIsPrecise: Bool = false, updateAvailable: Bool = false,
                updateCheckedAt: Int64? = nil, invalidation: PackInvalidation? = nil) {
        self.id = id
        self.name = name
        self.state = state
        self.errorJSON = errorJSON
        self.context = context
        self.definition = definition
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.completedAt = completedAt
        self.limitsJSON = limitsJSON
        self.expectedResources = expectedResources
        self.expectedTiles = expectedTiles
        self.expectedIsPrecise = expectedIsPrecise
        self.updateAvailable = updateAvailable
        self.updateCheckedAt = updateCheckedAt
        self.invalidation = invalidation
    }

    static let selectSQL = """
        SELECT p.region_id, p.name, p.state, p.error, p.context, r.definition, p.created_at, p.updated_at,
               p.completed_at, p.limits, p.expected_resources, p.expected_tiles, p.expected_is_precise,
               p.update_available, p.update_checked_at,
               i.unchanged, i.updated, i.removed, i.started_at, i.completed_at
        FROM packd_packs p JOIN regions r ON r.id = p.region_id
        LEFT JOIN packd_invalidations i ON i.pack_id = p.region_id
        """

    /// Reads the current row of a statement built on `selectSQL`.
    init(row: Statement) {
        self.init(id: row.int64(at: 0), name: row.string(at: 1) ?? "", state: row.string(at: 2) ?? "",
                  errorJSON: row.string(at: 3), context: row.blob(at: 4), definition: row.string(at: 5) ?? "",
                  createdAt: row.int64(at: 6), updatedAt: row.int64(at: 7), completedAt: row.optionalInt64(at: 8),
                  limitsJSON: row.string(at: 9), expectedResources: row.int64(at: 10), expectedTiles: row.int64(at: 11),
                  expectedIsPrecise: row.int64(at: 12) != 0, updateAvailable: row.int64(at: 13) != 0,
                  updateCheckedAt: row.optionalInt64(at: 14),
                  invalidation: row.optionalInt64(at: 18).map { startedAt in
                      PackInvalidation(unchanged: row.int64(at: 15), updated: row.int64(at: 16), removed: row.int64(at: 17),
                                       startedAt: startedAt, completedAt: row.optionalInt64(at: 19))
                  })
    }
}
