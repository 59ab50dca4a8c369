import Packs
import Writer

/// The ambient cache: rows no pack links. Its size is `LENGTH(data)` plus the byte length of the
/// row's URL (so "no content" rows still count something); pack rows never count and are never
/// evicted.
extension OfflineDatabase {
    static let ambientSizeSQL = """
        SELECT
          (SELECT IFNULL(SUM(IFNULL(LENGTH(data), 0) + LENGTH(CAST(url_template AS BLOB))), 0) FROM tiles
            WHERE NOT EXISTS (SELECT 1 FROM region_tiles WHERE tile_id = tiles.id))
        + (SELECT IFNULL(SUM(IFNULL(LENGTH(data), 0) + LENGTH(CAST(url AS BLOB))), 0) FROM resources
            WHERE NOT EXISTS (SELECT 1 FROM region_resources WHERE resource_id = resources.id))
        """

    /// Counts the ambient size from the tables (a full scan): at open, in tests, and after
    /// anything that changed the tables behind the writer's back (an import).
    public func recountAmbientCacheSize() throws -> Int64 {
        try database.scalarInt(Self.ambientSizeSQL) ?? 0
    }

    /// Re-bases the maintained ambient size on a recount.
    public func resynchronizeAmbientCacheSize() throws {
        ambientCacheSize = try recountAmbientCacheSize()
    }

    /// Sets (and persists) the limit, evicting down to it right away.
    public func setMaximumAmbientCacheSize(_ size: Int64) throws {
        let size = max(0, size)
        let (maximumBefore, sizeBefore) = (maximumAmbientCacheSize, ambientCacheSize)
        do {
            try database.transaction {
                try database.execute("""
                    INSERT INTO packd_meta (key, value) VALUES ('ambient_cache_maximum', ?1)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, [.integer(size)])
                maximumAmbientCacheSize = size
                try trimAmbientCache()
            }
        } catch {
            (maximumAmbientCacheSize, ambientCacheSize) = (maximumBefore, sizeBefore)
            throw error
        }
        try database.execute("PRAGMA incremental_vacuum")
    }

    /// Evicts least-recently-accessed ambient rows (ties: oldest id first) once the ambient size
    /// exceeds the limit, down to 90 % of it. The headroom matters: finding the oldest ambient
    /// rows walks the `accessed` index past every (older) pack row, so a cache kept exactly at its
    /// limit would pay that walk on every cached write. Runs inside the caller's transaction.
    func trimAmbientCache() throws {
        guard ambientCacheSize > maximumAmbientCacheSize else { return }
        let target = maximumAmbientCacheSize - maximumAmbientCacheSize / 10
        let oldest = try database.cachedStatement("""
            SELECT 1, tiles.id, accessed, IFNULL(LENGTH(data), 0) + LENGTH(CAST(url_template AS BLOB)) FROM tiles
              WHERE NOT EXISTS (SELECT 1 FROM region_tiles WHERE tile_id = tiles.id)
            UNION ALL
            SELECT 0, resources.id, accessed, IFNULL(LENGTH(data), 0) + LENGTH(CAST(url AS BLOB)) FROM resources
              WHERE NOT EXISTS (SELECT 1 FROM region_resources WHERE resource_id = resources.id)
            ORDER BY 3, 2 LIMIT 256
            """)
        while ambientCacheSize > target {
            var victims: [(isTile: Bool, id: Int64, size: Int64)] = []
            try oldest.forEachRow { row in
                victims.append((row.int64(at: 0) == 1, row.int64(at: 1), row.int64(at: 3)))
            }
            if victims.isEmpty { return }
            for victim in victims where ambientCacheSize > target {
                try database.execute(victim.isTile ? "DELETE FROM tiles WHERE id = ?1" : "DELETE FROM resources WHERE id = ?1",
                                     [.integer(victim.id)])
                ambientCacheSize -= victim.size
            }
        }
    }

    /// Deletes every ambient row (MapLibre's `clearAmbientCache`).
    public func clearAmbientCache() throws {
        try database.transaction {
            try database.execute("""
                DELETE FROM tiles WHERE id NOT IN (SELECT tile_id FROM region_tiles);
                DELETE FROM resources WHERE id NOT IN (SELECT resource_id FROM region_resources);
                """)
        }
        ambientCacheSize = 0
        try database.execute("PRAGMA incremental_vacuum")
    }

    /// Marks every ambient row stale so it is revalidated before use (`invalidateAmbientCache`).
    public func invalidateAmbientCache() throws {
        try database.transaction {
            try database.execute("""
                UPDATE tiles SET expires = 0, must_revalidate = 1 WHERE id NOT IN (SELECT tile_id FROM region_tiles);
                UPDATE resources SET expires = 0, must_revalidate = 1 WHERE id NOT IN (SELECT resource_id FROM region_resources);
                """)
        }
    }

    /// Applies batched `accessed` updates collected from readers.
    func applyAccessTouches(_ touches: AccessTouches, now: Int64) throws {
        for id in touches.tileIDs {
            try database.execute("UPDATE tiles SET accessed = ?1 WHERE id = ?2", [.integer(now), .integer(id)])
        }
        for id in touches.resourceIDs {
            try database.execute("UPDATE resources SET accessed = ?1 WHERE id = ?2", [.integer(now), .integer(id)])
        }
    }
}
