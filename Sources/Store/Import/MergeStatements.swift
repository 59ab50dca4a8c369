/// The SQL of `OfflineDatabaseImport`, in order. MapLibre's `merge_sideloaded.sql` semantics with
/// UPDATE-then-INSERT in place of REPLACE (REPLACE deletes the old row and would cascade away
/// other packs' links and change ids). The merge takes one number of the change sequence and
/// gives it to every row it replaces and every row it newly links to a pack that has a version
/// (`PackVersion`), so those packs' next versions hold them.
enum MergeStatements {
    private static let change = "(SELECT value FROM main.packd_meta WHERE key = 'change_sequence')"

    /// Numbers the rows of `table` (`tiles`/`resources`) that `rows` selects as changed.
    private static func recordChanges(_ table: String, _ rows: String) -> String {
        let (changes, column) = table == "tiles" ? ("packd_tile_changes", "tile_id") : ("packd_resource_changes", "resource_id")
        return "INSERT INTO main.\(changes) (\(column), change) \(rows) ON CONFLICT (\(column)) DO UPDATE SET change = excluded.change"
    }

    /// Side tiles/resources that belong to a region (the side's ambient cache is not imported).
    private static let sideRegionTiles = "(SELECT DISTINCT st.* FROM side.region_tiles srt JOIN side.tiles st ON st.id = srt.tile_id)"
    private static let sideRegionResources =
        "(SELECT DISTINCT sr.* FROM side.region_resources srr JOIN side.resources sr ON sr.id = srr.resource_id)"

    static let all: [String] = [
        """
        INSERT INTO main.regions (definition, description)
        SELECT DISTINCT sr.definition, sr.description FROM side.regions sr
        WHERE NOT EXISTS (SELECT 1 FROM main.regions r WHERE r.definition = sr.definition AND r.description IS sr.description)
        ORDER BY sr.id
        """,
        """
        CREATE TEMPORARY TABLE region_mapping AS
        SELECT sr.id AS side_region_id, min(r.id) AS main_region_id
        FROM side.regions sr JOIN main.regions r ON r.definition = sr.definition AND r.description IS sr.description
        GROUP BY sr.id
        """,
        "UPDATE main.packd_meta SET value = value + 1 WHERE key = 'change_sequence'",
        recordChanges("tiles", """
            SELECT t.id, \(change) FROM \(sideRegionTiles) AS st JOIN main.tiles t
              ON st.url_template = t.url_template AND st.pixel_ratio = t.pixel_ratio AND st.z = t.z AND st.x = t.x AND st.y = t.y
            WHERE st.modified > t.modified
            """),
        // Newer tiles replace stored ones in place; `>` is false when either `modified` is NULL.
        """
        UPDATE main.tiles SET expires = st.expires, modified = st.modified, etag = st.etag, data = st.data,
          compressed = st.compressed, accessed = st.accessed, must_revalidate = st.must_revalidate
        FROM \(sideRegionTiles) AS st
        WHERE st.url_template = tiles.url_template AND st.pixel_ratio = tiles.pixel_ratio
          AND st.z = tiles.z AND st.x = tiles.x AND st.y = tiles.y AND st.modified > tiles.modified
        """,
        """
        INSERT INTO main.tiles (url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed, accessed,
                                must_revalidate)
        SELECT st.url_template, st.pixel_ratio, st.z, st.x, st.y, st.expires, st.modified, st.etag, st.data,
               st.compressed, st.accessed, st.must_revalidate
        FROM \(sideRegionTiles) AS st
        WHERE NOT EXISTS (SELECT 1 FROM main.tiles t WHERE t.url_template = st.url_template AND t.pixel_ratio = st.pixel_ratio
                            AND t.z = st.z AND t.x = st.x AND t.y = st.y)
        ORDER BY st.id
        """,
        recordChanges("tiles", """
            SELECT DISTINCT t.id, \(change) FROM side.region_tiles srt
            JOIN temp.region_mapping rm ON rm.side_region_id = srt.region_id
            JOIN main.packd_packs p ON p.region_id = rm.main_region_id AND p.version > 0
            JOIN side.tiles st ON st.id = srt.tile_id
            JOIN main.tiles t ON t.url_template = st.url_template AND t.pixel_ratio = st.pixel_ratio
                             AND t.z = st.z AND t.x = st.x AND t.y = st.y
            WHERE NOT EXISTS (SELECT 1 FROM main.region_tiles l WHERE l.region_id = rm.main_region_id AND l.tile_id = t.id)
            """),
        """
        INSERT OR IGNORE INTO main.region_tiles (region_id, tile_id)
        SELECT rm.main_region_id, t.id
        FROM side.region_tiles srt
        JOIN temp.region_mapping rm ON rm.side_region_id = srt.region_id
        JOIN side.tiles st ON st.id = srt.tile_id
        JOIN main.tiles t ON t.url_template = st.url_template AND t.pixel_ratio = st.pixel_ratio
                         AND t.z = st.z AND t.x = st.x AND t.y = st.y
        """,
        recordChanges("resources", """
            SELECT r.id, \(change) FROM \(sideRegionResources) AS sr JOIN main.resources r ON r.url = sr.url
            WHERE sr.modified > r.modified
            """),
        """
        UPDATE main.resources SET kind = sr.kind, expires = sr.expires, modified = sr.modified, etag = sr.etag,
          data = sr.data, compressed = sr.compressed, accessed = sr.accessed, must_revalidate = sr.must_revalidate
        FROM \(sideRegionResources) AS sr
        WHERE sr.url = resources.url AND sr.modified > resources.modified
        """,
        """
        INSERT INTO main.resources (url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
        SELECT sr.url, sr.kind, sr.expires, sr.modified, sr.etag, sr.data, sr.compressed, sr.accessed, sr.must_revalidate
        FROM \(sideRegionResources) AS sr
        WHERE NOT EXISTS (SELECT 1 FROM main.resources r WHERE r.url = sr.url)
        ORDER BY sr.id
        """,
        recordChanges("resources", """
            SELECT DISTINCT r.id, \(change) FROM side.region_resources srr
            JOIN temp.region_mapping rm ON rm.side_region_id = srr.region_id
            JOIN main.packd_packs p ON p.region_id = rm.main_region_id AND p.version > 0
            JOIN side.resources sr ON sr.id = srr.resource_id
            JOIN main.resources r ON r.url = sr.url
            WHERE NOT EXISTS (SELECT 1 FROM main.region_resources l WHERE l.region_id = rm.main_region_id AND l.resource_id = r.id)
            """),
        """
        INSERT OR IGNORE INTO main.region_resources (region_id, resource_id)
        SELECT rm.main_region_id, r.id
        FROM side.region_resources srr
        JOIN temp.region_mapping rm ON rm.side_region_id = srr.region_id
        JOIN side.resources sr ON sr.id = srr.resource_id
        JOIN main.resources r ON r.url = sr.url
        """,
    ]

    /// Stores a recounted progress row (`ProgressQueries.recount`), keeping `failed_resources`.
    static let storeProgress = """
        INSERT INTO packd_progress (pack_id, completed_resources, completed_bytes, completed_tiles, completed_tile_bytes)
        VALUES (?1, ?2, ?3, ?4, ?5)
        ON CONFLICT (pack_id) DO UPDATE SET completed_resources = excluded.completed_resources,
          completed_bytes = excluded.completed_bytes, completed_tiles = excluded.completed_tiles,
          completed_tile_bytes = excluded.completed_tile_bytes
        """
}
