import Packs

/// The progress SQL shared by the writer and readers: the maintained row, and the recount from
/// the link tables that it must always equal (MapLibre's `getRegionCompletedStatus` queries).
public enum ProgressQueries {
    public static func stored(_ packID: Int64, in database: Database) throws -> StoredProgress? {
        let statement = try database.cachedStatement("""
            SELECT completed_resources, completed_bytes, completed_tiles, completed_tile_bytes, failed_resources,
                   archive_requests, archive_bytes
            FROM packd_progress WHERE pack_id = ?1
            """)
        try statement.bind([.integer(packID)])
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return StoredProgress(completedResources: statement.int64(at: 0), completedBytes: statement.int64(at: 1),
                            completedTiles: statement.int64(at: 2), completedTileBytes: statement.int64(at: 3),
                            failedResources: statement.int64(at: 4), archiveRequests: statement.int64(at: 5),
                            archiveBytes: statement.int64(at: 6))
    }

    /// Recomputes the completed counts from `region_resources`/`region_tiles`, as MapLibre does.
    /// Proportional to the pack's size: for checks and repair, not for every progress event.
    public static func recount(_ packID: Int64, in database: Database) throws -> StoredProgress {
        func countAndSize(_ sql: String) throws -> (Int64, Int64) {
            let statement = try database.cachedStatement(sql)
            try statement.bind([.integer(packID)])
            defer { statement.reset() }
            try statement.step()
            return (statement.int64(at: 0), statement.optionalInt64(at: 1) ?? 0)
        }
        let (resources, resourceBytes) = try countAndSize(
            "SELECT COUNT(*), SUM(LENGTH(data)) FROM region_resources, resources WHERE region_id = ?1 AND resource_id = resources.id")
        let (tiles, tileBytes) = try countAndSize(
            "SELECT COUNT(*), SUM(LENGTH(data)) FROM region_tiles, tiles WHERE region_id = ?1 AND tile_id = tiles.id")
        return StoredProgress(completedResources: resources + tiles, completedBytes: resourceBytes + tileBytes,
                            completedTiles: tiles, completedTileBytes: tileBytes)
    }

    /// Distinct tiles linked to any pack, recounted (the maintained value is `packd_totals`).
    public static func recountLinkedTiles(in database: Database) throws -> Int64 {
        try database.scalarInt("SELECT COUNT(DISTINCT tile_id) FROM region_tiles") ?? 0
    }
}
