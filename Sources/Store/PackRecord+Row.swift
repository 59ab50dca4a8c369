import CSQLite
import Foundation
import Packs

/// How a `PackRecord` is read from `packd_packs` (with its MapLibre region and last revalidation).
extension PackRecord {
    static let selectSQL = """
        SELECT p.region_id, p.name, p.state, p.error, p.context, r.definition, p.created_at, p.updated_at,
               p.completed_at, p.limits, p.expected_resources, p.expected_tiles, p.expected_is_precise,
               p.update_available, p.update_checked_at,
               i.unchanged, i.updated, i.removed, i.started_at, i.completed_at, p.version,
               p.refresh_every, p.next_refresh_at, p.start_area, p.start_area_ready_at, p.skipped_glyph_ranges
        FROM packd_packs p JOIN regions r ON r.id = p.region_id
        LEFT JOIN packd_invalidations i ON i.pack_id = p.region_id
        """

    /// Reads the current row of a statement built on `selectSQL`. A state this version does not
    /// know is a corrupt row, not a guess.
    init(row: Statement) throws(DatabaseError) {
        let stateText = row.string(at: 2) ?? ""
        guard let state = PackState(rawValue: stateText) else {
            throw DatabaseError(code: SQLITE_CORRUPT, message: "pack \(row.int64(at: 0)) has an unknown state '\(stateText)'")
        }
        self.init(id: row.int64(at: 0), name: row.string(at: 1) ?? "", state: state,
                  error: row.string(at: 3).flatMap(Self.decodeError), context: row.blob(at: 4),
                  definition: row.string(at: 5) ?? "",
                  createdAt: row.int64(at: 6), updatedAt: row.int64(at: 7), completedAt: row.optionalInt64(at: 8),
                  limits: row.string(at: 9).flatMap(Self.decodeLimits) ?? PackLimits(),
                  expectedResources: row.int64(at: 10), expectedTiles: row.int64(at: 11),
                  expectedIsPrecise: row.int64(at: 12) != 0, updateAvailable: row.int64(at: 13) != 0,
                  updateCheckedAt: row.optionalInt64(at: 14),
                  invalidation: row.optionalInt64(at: 18).map { startedAt in
                      PackInvalidation(unchanged: row.int64(at: 15), updated: row.int64(at: 16), removed: row.int64(at: 17),
                                       startedAt: startedAt, completedAt: row.optionalInt64(at: 19))
                  },
                  version: row.int64(at: 20), refreshEvery: row.string(at: 21), nextRefreshAt: row.optionalInt64(at: 22),
                  startArea: row.string(at: 23).flatMap(Self.decodeStartArea), startAreaReadyAt: row.optionalInt64(at: 24),
                  skippedGlyphRanges: row.string(at: 25).flatMap(Self.decodeSkippedGlyphRanges))
    }
}
