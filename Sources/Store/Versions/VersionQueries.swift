import Packs

/// The SQL of pack versions on packd's SQLite schema, read by both connections (and by the
/// exports, from the pack database they attach or a cluster node's staged copy, which has the
/// same tables): the version rows, and a pack's rows numbered above a change boundary.
enum VersionQueries {
    static let columns = """
        pack_id, version, created_at, change_boundary, resources, tiles, bytes, changed_resources, changed_bytes,
        removed_resources, name, description
        """

    static func version(_ row: Statement) -> PackVersion {
        PackVersion(packID: row.int64(at: 0), version: row.int64(at: 1), createdAt: row.int64(at: 2),
                    changeBoundary: row.int64(at: 3), resources: row.int64(at: 4), tiles: row.int64(at: 5),
                    bytes: row.int64(at: 6), changedResources: row.int64(at: 7), changedBytes: row.int64(at: 8),
                    removedResources: row.int64(at: 9), name: row.string(at: 10) ?? "", regionDescription: row.blob(at: 11))
    }

    /// The retained versions of a pack, newest first (`schema`: `main`, or an attached one).
    static func versions(of packID: Int64, in database: Database, schema: String = "main") throws -> [PackVersion] {
        var versions: [PackVersion] = []
        try database.cachedStatement("SELECT \(columns) FROM \(schema).packd_versions WHERE pack_id = ?1 ORDER BY version DESC")
            .forEachRow([.integer(packID)]) { versions.append(version($0)) }
        return versions
    }

    static func version(_ number: Int64, of packID: Int64, in database: Database, schema: String = "main") throws -> PackVersion? {
        var found: PackVersion?
        try database.cachedStatement("SELECT \(columns) FROM \(schema).packd_versions WHERE pack_id = ?1 AND version = ?2")
            .forEachRow([.integer(packID), .integer(number)]) { found = version($0) }
        return found
    }

    /// The pack's rows numbered above `?2` (links of pack `?1`), as `(is_tile, id, data IS NULL,
    /// stored size)`: driven from the change index, so it reads the changes after the boundary,
    /// not the pack's every link.
    static func changedRows(schema: String = "main") -> String {
        """
        SELECT 0, c.resource_id, r.data IS NULL, IFNULL(LENGTH(r.data), 0)
        FROM \(schema).packd_resource_changes c CROSS JOIN \(schema).region_resources rr CROSS JOIN \(schema).resources r
        WHERE c.change > ?2 AND rr.resource_id = c.resource_id AND rr.region_id = ?1 AND r.id = c.resource_id
        UNION ALL
        SELECT 1, c.tile_id, t.data IS NULL, IFNULL(LENGTH(t.data), 0)
        FROM \(schema).packd_tile_changes c CROSS JOIN \(schema).region_tiles rt CROSS JOIN \(schema).tiles t
        WHERE c.change > ?2 AND rt.tile_id = c.tile_id AND rt.region_id = ?1 AND t.id = c.tile_id
        """
    }

    /// Whether any row of pack `?1` is numbered above `?2`.
    static func changedSince(schema: String = "main") -> String {
        """
        SELECT EXISTS (SELECT 1 FROM \(schema).packd_resource_changes c CROSS JOIN \(schema).region_resources rr
                       WHERE c.change > ?2 AND rr.resource_id = c.resource_id AND rr.region_id = ?1)
            OR EXISTS (SELECT 1 FROM \(schema).packd_tile_changes c CROSS JOIN \(schema).region_tiles rt
                       WHERE c.change > ?2 AND rt.tile_id = c.tile_id AND rt.region_id = ?1)
        """
    }
}

/// Both connections read versions the same way.
extension SQLiteConnection {
    public func versions(of packID: Int64) throws -> [PackVersion] {
        try VersionQueries.versions(of: packID, in: database)
    }

    public func version(_ version: Int64, of packID: Int64) throws -> PackVersion? {
        try VersionQueries.version(version, of: packID, in: database)
    }
}
