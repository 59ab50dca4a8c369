import Packs

/// Reads for `invalidate` and `check-update`: a pack's rows in bounded pages, in row-id order
/// through the `UNIQUE (region_id, …_id)` index, so a pack of millions of tiles is walked with
/// flat memory and each page is one indexed range scan.
extension SQLiteConnection {
    /// Up to `limit` non-tile resources linked to the pack with a row id above `afterRowID`.
    public func resourceValidators(packID: Int64, afterRowID: Int64, limit: Int) throws -> [StoredValidators] {
        var page: [StoredValidators] = []
        try database.cachedStatement("""
            SELECT r.id, r.url, r.kind, r.etag, r.modified, r.data IS NOT NULL
            FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
            WHERE rr.region_id = ?1 AND rr.resource_id > ?2 ORDER BY rr.resource_id LIMIT ?3
            """).forEachRow([.integer(packID), .integer(afterRowID), .integer(Int64(max(1, limit)))]) { row in
            page.append(Self.resourceValidators(row))
        }
        return page
    }

    /// Up to `limit` tiles linked to the pack with a row id above `afterRowID`.
    public func tileValidators(packID: Int64, afterRowID: Int64, limit: Int) throws -> [StoredValidators] {
        var page: [StoredValidators] = []
        try database.cachedStatement("""
            SELECT t.id, t.url_template, t.pixel_ratio, t.z, t.x, t.y, t.etag, t.modified, t.data IS NOT NULL
            FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
            WHERE rt.region_id = ?1 AND rt.tile_id > ?2 ORDER BY rt.tile_id LIMIT ?3
            """).forEachRow([.integer(packID), .integer(afterRowID), .integer(Int64(max(1, limit)))]) { row in
            page.append(StoredValidators(
                rowID: row.int64(at: 0),
                key: .tile(TileKey(urlTemplate: row.string(at: 1) ?? "", pixelRatio: row.int64(at: 2), z: row.int64(at: 3),
                                   x: row.int64(at: 4), y: row.int64(at: 5))),
                etag: row.string(at: 6), modified: row.optionalInt64(at: 7), hasBody: row.int64(at: 8) != 0))
        }
        return page
    }

    /// The resources `check-update` probes: every style and TileJSON (at most `limit`), plus the
    /// first sprite JSON and the first glyph range by URL (`sprite.json` before `sprite@2x.json`,
    /// `0-255` first — by row id it would depend on which the download happened to store first),
    /// all linked to the pack.
    public func updateProbes(packID: Int64, limit: Int = 64) throws -> [StoredValidators] {
        var probes: [StoredValidators] = []
        try database.cachedStatement("""
            SELECT * FROM (SELECT r.id, r.url, r.kind, r.etag, r.modified, r.data IS NOT NULL
              FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
              WHERE rr.region_id = ?1 AND r.kind IN (1, 2) ORDER BY r.id LIMIT ?2)
            UNION ALL SELECT * FROM (SELECT r.id, r.url, r.kind, r.etag, r.modified, r.data IS NOT NULL
              FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
              WHERE rr.region_id = ?1 AND r.kind = 6 ORDER BY r.url LIMIT 1)
            UNION ALL SELECT * FROM (SELECT r.id, r.url, r.kind, r.etag, r.modified, r.data IS NOT NULL
              FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
              WHERE rr.region_id = ?1 AND r.kind = 4 ORDER BY r.url LIMIT 1)
            """).forEachRow([.integer(packID), .integer(Int64(max(1, limit)))]) { row in
            probes.append(Self.resourceValidators(row))
        }
        return probes
    }

    /// A row of `SELECT id, url, kind, etag, modified, data IS NOT NULL` from `resources`.
    private static func resourceValidators(_ row: Statement) -> StoredValidators {
        StoredValidators(
            rowID: row.int64(at: 0),
            key: .resource(url: row.string(at: 1) ?? "", kind: ResourceKind(rawValue: Int(row.int64(at: 2))) ?? .image),
            etag: row.string(at: 3), modified: row.optionalInt64(at: 4), hasBody: row.int64(at: 5) != 0)
    }
}
