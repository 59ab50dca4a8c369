import Packs
import Postgres

/// The ambient cache: rows no pack links, its size `octet_length(data)` plus the URL's (or URL
/// template's) bytes as in SQLite mode. The size is kept in the nodes' counter slots, so nodes
/// add to it without waiting for each other; evictions subtract what they actually deleted.
extension PostgresStoreConnection {
    static let ambientSizeSQL = """
        SELECT ((SELECT coalesce(sum(coalesce(octet_length(t.data), 0) + octet_length(tt.url_template)), 0)
                 FROM tiles t JOIN tile_templates tt ON tt.id = t.template_id
                 WHERE NOT EXISTS (SELECT 1 FROM region_tiles WHERE tile_id = t.id))
              + (SELECT coalesce(sum(coalesce(octet_length(r.data), 0) + octet_length(r.url)), 0) FROM resources r
                 WHERE NOT EXISTS (SELECT 1 FROM region_resources WHERE resource_id = r.id)))::int8
        """

    /// Counted from the tables (a scan), for checks; `ambientCache()` is the maintained value.
    public func recountAmbientCacheSize() throws -> Int64 {
        try scalar(Self.ambientSizeSQL) ?? 0
    }

    /// Re-bases the maintained size on a recount: this node's slot takes the difference.
    func resynchronizeAmbientCacheSize() throws {
        let maintained = try ambientCache().size
        try addTotals(linkedTiles: 0, ambientBytes: try recountAmbientCacheSize() - maintained)
    }

    public func setMaximumAmbientCacheSize(_ size: Int64) throws {
        try transaction {
            try setMeta("ambient_cache_maximum", max(0, size))
            try trimAmbientCache()
        }
    }

    /// Evicts least-recently-accessed ambient rows (ties: lowest id) once the size exceeds the
    /// limit, down to 90 % of it (see `OfflineDatabase.trimAmbientCache` for why the headroom).
    func trimAmbientCache() throws {
        var (size, maximum) = try ambientCache()
        guard size > maximum else { return }
        let target = maximum - maximum / 10
        while size > target {
            var victims: (tiles: [Int64], resources: [Int64]) = ([], [])
            var freed: Int64 = 0
            for row in try query("""
                (SELECT 1::int8 AS tile, t.id, t.accessed, coalesce(octet_length(t.data), 0) + octet_length(tt.url_template)
                 FROM tiles t JOIN tile_templates tt ON tt.id = t.template_id
                 WHERE NOT EXISTS (SELECT 1 FROM region_tiles WHERE tile_id = t.id) ORDER BY t.accessed, t.id LIMIT 256)
                UNION ALL
                (SELECT 0::int8, r.id, r.accessed, coalesce(octet_length(r.data), 0) + octet_length(r.url) FROM resources r
                 WHERE NOT EXISTS (SELECT 1 FROM region_resources WHERE resource_id = r.id) ORDER BY r.accessed, r.id LIMIT 256)
                ORDER BY 3, 2 LIMIT 256
                """) {
                guard size - freed > target else { break }
                if try row.int64(0) == 1 { victims.tiles.append(try row.int64(1)) } else { victims.resources.append(try row.int64(1)) }
                freed += try row.int64(3)
            }
            if victims.tiles.isEmpty && victims.resources.isEmpty { return }
            let deleted = try deleteAmbient(tiles: victims.tiles, resources: victims.resources)
            size -= max(deleted, 1)
        }
    }

    /// Deletes the rows among these that are still ambient; the bytes that freed, subtracted
    /// from this node's slot.
    @discardableResult
    private func deleteAmbient(tiles: [Int64], resources: [Int64]) throws -> Int64 {
        var freed: Int64 = 0
        if !tiles.isEmpty {
            freed += try scalar("""
                WITH gone AS (DELETE FROM tiles t USING tile_templates tt
                  WHERE t.id = ANY($1) AND tt.id = t.template_id
                    AND NOT EXISTS (SELECT 1 FROM region_tiles WHERE tile_id = t.id)
                  RETURNING coalesce(octet_length(t.data), 0) + octet_length(tt.url_template) AS size)
                SELECT coalesce(sum(size), 0)::int8 FROM gone
                """, [.int8Array(tiles)]) ?? 0
        }
        if !resources.isEmpty {
            freed += try scalar("""
                WITH gone AS (DELETE FROM resources r WHERE r.id = ANY($1)
                    AND NOT EXISTS (SELECT 1 FROM region_resources WHERE resource_id = r.id)
                  RETURNING coalesce(octet_length(r.data), 0) + octet_length(r.url) AS size)
                SELECT coalesce(sum(size), 0)::int8 FROM gone
                """, [.int8Array(resources)]) ?? 0
        }
        try addTotals(linkedTiles: 0, ambientBytes: -freed)
        return freed
    }

    /// Deletes every ambient row (MapLibre's `clearAmbientCache`).
    public func clearAmbientCache() throws {
        try transaction {
            let tiles = try query("SELECT id FROM tiles t WHERE NOT EXISTS (SELECT 1 FROM region_tiles WHERE tile_id = t.id)")
                .map { try $0.int64(0) }
            let resources = try query("""
                SELECT id FROM resources r WHERE NOT EXISTS (SELECT 1 FROM region_resources WHERE resource_id = r.id)
                """).map { try $0.int64(0) }
            try deleteAmbient(tiles: tiles, resources: resources)
        }
    }

    /// Marks every ambient row stale so it is revalidated before use.
    public func invalidateAmbientCache() throws {
        try transaction {
            try query("""
                UPDATE tiles t SET expires = 0, must_revalidate = true
                WHERE NOT EXISTS (SELECT 1 FROM region_tiles WHERE tile_id = t.id)
                """)
            try query("""
                UPDATE resources r SET expires = 0, must_revalidate = true
                WHERE NOT EXISTS (SELECT 1 FROM region_resources WHERE resource_id = r.id)
                """)
        }
    }
}
