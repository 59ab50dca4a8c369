import Packs

/// The writer's side of `invalidate`: the conditional start of a revalidation and its committed
/// counts. Each operation is one transaction.
extension OfflineDatabase {
    /// Zeroes the counts and sets `started_at` (a revalidation resumed after a suspend or a
    /// restart starts over: what it already refreshed then answers 304).
    public func restartInvalidation(_ packID: Int64, now: Int64) throws {
        try database.execute("""
            INSERT INTO packd_invalidations (pack_id, unchanged, updated, removed, started_at, completed_at)
            VALUES (?1, 0, 0, 0, ?2, NULL)
            ON CONFLICT (pack_id) DO UPDATE SET unchanged = 0, updated = 0, removed = 0, started_at = ?2, completed_at = NULL
            """, [.integer(packID), .integer(now)])
    }

    /// Stores the running totals (and `completed_at` when given); returns the row as committed
    /// and the pack's progress, nil when the pack is gone.
    public func recordInvalidation(_ packID: Int64, unchanged: Int64, updated: Int64, removed: Int64,
                                   completedAt: Int64?) throws -> (PackInvalidation, StoredProgress)? {
        try database.transaction {
            try database.execute("""
                UPDATE packd_invalidations SET unchanged = ?2, updated = ?3, removed = ?4, completed_at = ?5 WHERE pack_id = ?1
                """, [.integer(packID), .integer(unchanged), .integer(updated), .integer(removed), DatabaseValue(completedAt)])
            guard database.changes > 0,
                  let startedAt = try database.scalarInt("SELECT started_at FROM packd_invalidations WHERE pack_id = ?1",
                                                         [.integer(packID)]) else { return nil }
            return (PackInvalidation(unchanged: unchanged, updated: updated, removed: removed, startedAt: startedAt,
                                     completedAt: completedAt), try progress(packID))
        }
    }
}
