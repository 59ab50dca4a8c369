import Packs

/// The stored tiles of a pack with their bodies, page by page: what glyph subsetting reads to
/// find the text of a region's labels.
extension SQLiteConnection {
    /// Tiles with content of the templates in `urlTemplates`, by tile id after `afterRowID`
    /// (the `region_tiles` UNIQUE index: a range scan per page), at most `limit` rows and no row
    /// after the one that brings the page over `maxBytes`.
    public func tileBodies(packID: Int64, urlTemplates: [String], afterRowID: Int64, limit: Int,
                           maxBytes: Int) throws -> [StoredTileBody] {
        guard !urlTemplates.isEmpty else { return [] }
        // A pack reads a handful of templates: one placeholder each (one cached statement per count).
        let templates = (0..<urlTemplates.count).map { "?\($0 + 4)" }.joined(separator: ", ")
        let statement = try database.cachedStatement("""
            SELECT t.id, t.url_template, t.pixel_ratio, t.z, t.x, t.y, t.data, t.compressed
            FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
            WHERE rt.region_id = ?1 AND rt.tile_id > ?2 AND t.data IS NOT NULL AND t.url_template IN (\(templates))
            ORDER BY rt.tile_id LIMIT ?3
            """)
        try statement.bind([.integer(packID), .integer(afterRowID), .integer(Int64(max(1, limit)))]
                           + urlTemplates.map { .text($0) })
        defer { statement.reset() }
        var page: [StoredTileBody] = []
        var bytes = 0
        while bytes <= maxBytes, try statement.step() {
            let data = statement.blob(at: 6) ?? []
            bytes += data.count
            page.append(StoredTileBody(
                rowID: statement.int64(at: 0),
                key: TileKey(urlTemplate: statement.string(at: 1) ?? "", pixelRatio: statement.int64(at: 2),
                             z: statement.int64(at: 3), x: statement.int64(at: 4), y: statement.int64(at: 5)),
                body: StoredBody(data: data, compressed: statement.int64(at: 7) != 0)))
        }
        return page
    }

    /// One query per 500 URLs, through the `resources` UNIQUE (url) index.
    public func storedSizes(urls: [String]) throws -> [String: Int64] {
        var sizes: [String: Int64] = [:]
        for start in stride(from: 0, to: urls.count, by: 500) {
            let chunk = Array(urls[start..<min(start + 500, urls.count)])
            let list = (1...chunk.count).map { "?\($0)" }.joined(separator: ", ")
            try database.cachedStatement("SELECT url, LENGTH(data) FROM resources WHERE data IS NOT NULL AND url IN (\(list))")
                .forEachRow(chunk.map { .text($0) }) { row in
                    if let url = row.string(at: 0) { sizes[url] = row.int64(at: 1) }
                }
        }
        return sizes
    }
}
