import Foundation

/// The columns of one result row as a store's driver reads them: SQLite's statement, libpq's row.
/// Column numbers count from 0; a NULL where a value is required reads as the driver's zero or
/// throws, as the driver does.
public protocol StoredRowColumns {
    func int64(_ column: Int) throws -> Int64
    func int64OrNil(_ column: Int) throws -> Int64?
    func bool(_ column: Int) throws -> Bool
    func string(_ column: Int) throws -> String
    func stringOrNil(_ column: Int) throws -> String?
    func bytesOrNil(_ column: Int) throws -> [UInt8]?
}

/// How a `PackRecord` is read from the pack query every store runs (its `packd_packs` row with
/// its MapLibre region and last revalidation), and how its JSON columns (`error`, `limits`) are
/// written and read, so a pack reads back the same from SQLite and PostgreSQL.
extension PackRecord {
    /// The pack query: both schemas name these tables and columns alike. Add a `WHERE`/`ORDER BY`.
    public static let selectSQL = """
        SELECT p.region_id, p.name, p.state, p.error, p.context, r.definition, p.created_at, p.updated_at,
               p.completed_at, p.limits, p.expected_resources, p.expected_tiles, p.expected_is_precise,
               p.update_available, p.update_checked_at,
               i.unchanged, i.updated, i.removed, i.started_at, i.completed_at, p.version,
               p.refresh_every, p.next_refresh_at, p.start_area, p.start_area_ready_at, p.skipped_glyph_ranges
        FROM packd_packs p JOIN regions r ON r.id = p.region_id
        LEFT JOIN packd_invalidations i ON i.pack_id = p.region_id
        """

    /// Reads a row of `selectSQL`. A state this version does not know is a corrupt row, not a guess.
    public init(row: some StoredRowColumns) throws {
        let stateText = try row.string(2)
        guard let state = PackState(rawValue: stateText) else {
            throw StoreError(.corrupt, "pack \(try row.int64(0)) has an unknown state '\(stateText)'")
        }
        let invalidation = try row.int64OrNil(18).map { startedAt in
            PackInvalidation(unchanged: try row.int64(15), updated: try row.int64(16), removed: try row.int64(17),
                             startedAt: startedAt, completedAt: try row.int64OrNil(19))
        }
        self.init(id: try row.int64(0), name: try row.string(1), state: state,
                  error: try row.stringOrNil(3).flatMap(Self.decodeError), context: try row.bytesOrNil(4),
                  definition: try row.string(5), createdAt: try row.int64(6), updatedAt: try row.int64(7),
                  completedAt: try row.int64OrNil(8),
                  limits: try row.stringOrNil(9).flatMap(Self.decodeLimits) ?? PackLimits(),
                  expectedResources: try row.int64(10), expectedTiles: try row.int64(11),
                  expectedIsPrecise: try row.bool(12), updateAvailable: try row.bool(13),
                  updateCheckedAt: try row.int64OrNil(14), invalidation: invalidation, version: try row.int64(20),
                  refreshEvery: try row.stringOrNil(21), nextRefreshAt: try row.int64OrNil(22),
                  startArea: try row.stringOrNil(23).flatMap(Self.decodeStartArea), startAreaReadyAt: try row.int64OrNil(24),
                  skippedGlyphRanges: try row.stringOrNil(25).flatMap(Self.decodeSkippedGlyphRanges))
    }

    /// The `error` column's JSON; an unreadable one still tells that the pack failed.
    public static func decodeError(_ json: String) -> PackError? {
        (try? JSONDecoder().decode(PackError.self, from: Data(json.utf8)))
            ?? PackError(.internalError, "the stored error is unreadable: \(json.prefix(200))")
    }

    public static func decodeLimits(_ json: String) -> PackLimits? {
        try? JSONDecoder().decode(PackLimits.self, from: Data(json.utf8))
    }

    public static func decodeStartArea(_ json: String) -> StartArea? {
        try? JSONDecoder().decode(StartArea.self, from: Data(json.utf8))
    }

    public static func decodeSkippedGlyphRanges(_ json: String) -> SkippedGlyphRanges? {
        try? JSONDecoder().decode(SkippedGlyphRanges.self, from: Data(json.utf8))
    }

    /// The columns' JSON: sorted keys, as the API writes documents.
    public static func encodeJSON(_ value: some Encodable) -> String? {
        (try? SortedJSONEncoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }
}
