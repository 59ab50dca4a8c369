import Packs

extension SQLiteConnection {
    /// Every stored tile of the window, with whether `packID` links it and whether it is fresh at
    /// `now` (no `expires`, or a later one). Runs once per band of a download, also on a resume
    /// with most of a large pack stored, so it reads only the window's own rows:
    ///
    /// - The unique index is (url_template, pixel_ratio, z, x, y). With `x BETWEEN` and
    ///   `y BETWEEN` SQLite seeks the x range and walks every y of each column — the whole zoom
    ///   for a band of a few wide rows, which made banding a big region quadratic. One seek per
    ///   column (the CTE, kept outermost by CROSS JOIN) reads only the window.
    /// - A window's rows were mostly written together, so their ids are close: one range scan of
    ///   the pack's links beats a B-tree seek per row. Scattered ids (rows shared with older
    ///   packs) fall back to a seek per row.
    public func tileWindow(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                           xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64,
                           version: TileVersion?) throws -> StoredTileWindow {
        var window = StoredTileWindow(linkedHere: try TileBitmap(xRange: xRange, yRange: yRange),
                                      linkable: try TileBitmap(xRange: xRange, yRange: yRange))
        let rowsOfWindow = try database.cachedStatement("""
            WITH RECURSIVE columns(x) AS (SELECT ?4 UNION ALL SELECT x + 1 FROM columns WHERE x < ?5)
            SELECT tiles.id, tiles.x, tiles.y, tiles.expires IS NULL OR tiles.expires > ?8
            FROM columns CROSS JOIN tiles
            WHERE tiles.url_template = ?1 AND tiles.pixel_ratio = ?2 AND tiles.z = ?3 AND tiles.x = columns.x
              AND tiles.y BETWEEN ?6 AND ?7 AND (?9 = 0 OR (tiles.etag IS ?10 AND tiles.modified IS ?11))
            """)
        var rows: [(id: Int64, x: Int64, y: Int64, fresh: Bool)] = []
        var lowest = Int64.max
        var highest = Int64.min
        try rowsOfWindow.forEachRow([.text(urlTemplate), .integer(pixelRatio), .integer(z), .integer(xRange.lowerBound),
                                     .integer(xRange.upperBound), .integer(yRange.lowerBound), .integer(yRange.upperBound),
                                     .integer(now), .integer(version == nil ? 0 : 1), DatabaseValue(version?.etag),
                                     DatabaseValue(version?.modified)]) {
            let id = $0.int64(at: 0)
            rows.append((id, $0.int64(at: 1), $0.int64(at: 2), $0.int64(at: 3) != 0))
            lowest = min(lowest, id)
            highest = max(highest, id)
        }
        guard !rows.isEmpty else { return window }
        let isLinked: (Int64) throws -> Bool
        if highest - lowest <= Int64(rows.count) * 4 + 4096 {
            var linked = Set<Int64>(minimumCapacity: rows.count)
            try database.cachedStatement("""
                SELECT tile_id FROM region_tiles WHERE region_id = ?1 AND tile_id BETWEEN ?2 AND ?3
                """).forEachRow([.integer(packID), .integer(lowest), .integer(highest)]) { linked.insert($0.int64(at: 0)) }
            isLinked = { linked.contains($0) }
        } else {
            let link = try database.cachedStatement("SELECT 1 FROM region_tiles WHERE region_id = ?1 AND tile_id = ?2")
            isLinked = { try link.scalarInt([.integer(packID), .integer($0)]) != nil }
        }
        for row in rows {
            if try isLinked(row.id) {
                window.linkedHere.insert(x: row.x, y: row.y)
            } else if row.fresh {
                window.linkable.insert(x: row.x, y: row.y)
            }
        }
        return window
    }
}
