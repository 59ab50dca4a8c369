import Packs

/// Scheduled refreshes on the writer's connection: setting a pack's schedule, and claiming a due
/// refresh (its due time moved and `invalidate` applied in one transaction).
extension OfflineDatabase {
    @discardableResult
    public func setRefresh(_ packID: Int64, every: String?, next: Int64?, now: Int64) throws -> Bool {
        try database.execute("""
            UPDATE packd_packs SET refresh_every = ?2, next_refresh_at = ?3, updated_at = ?4 WHERE region_id = ?1
            """, [.integer(packID), DatabaseValue(every), DatabaseValue(next), .integer(now)])
        return database.changes == 1
    }

    public func claimRefresh(_ packID: Int64, due: Int64, next: Int64, now: Int64) throws -> TransitionOutcome? {
        try database.transaction { () throws -> TransitionOutcome? in
            try database.execute("UPDATE packd_packs SET next_refresh_at = ?3 WHERE region_id = ?1 AND next_refresh_at = ?2",
                                 [.integer(packID), .integer(due), .integer(next)])
            guard database.changes == 1 else { return nil }
            return try transition(packID, .invalidate, now: now)
        }
    }
}

/// Both connections find due refreshes the same way.
extension SQLiteConnection {
    public func dueRefreshes(now: Int64, limit: Int) throws -> [DueRefresh] {
        var due: [DueRefresh] = []
        try database.cachedStatement("""
            SELECT region_id, refresh_every, next_refresh_at FROM packd_packs
            WHERE next_refresh_at IS NOT NULL AND next_refresh_at <= ?1 AND refresh_every IS NOT NULL
            ORDER BY next_refresh_at, region_id LIMIT ?2
            """).forEachRow([.integer(now), .integer(Int64(max(0, limit)))]) { row in
            due.append(DueRefresh(packID: row.int64(at: 0), every: row.string(at: 1) ?? "", due: row.int64(at: 2)))
        }
        return due
    }

    public func earliestRefresh() throws -> Int64? {
        try database.scalarInt("SELECT min(next_refresh_at) FROM packd_packs WHERE next_refresh_at IS NOT NULL")
    }
}
