import Foundation
import Packs
import Postgres

/// What a store holds of resources and tiles, as downloads, revalidations, offline serving and
/// estimates ask it (`ResourceIndex`), and linking rows stored elsewhere (`MutableResourceIndex`).
extension PostgresStoreConnection {
    // MARK: Reading rows

    public func resource(_ key: ResourceKey, linkedTo packID: Int64?) throws -> StoredResource? {
        let rows: PostgresRows
        let columns = "x.id, x.etag, x.expires, x.must_revalidate, x.modified, x.data, x.compressed, x.accessed"
        switch key {
        case .tile(let tile):
            guard let template = try templateID(tile.urlTemplate) else { return nil }
            rows = try query("""
                SELECT \(columns) FROM tiles x
                WHERE x.template_id = $1 AND x.pixel_ratio = $2 AND x.z = $3 AND x.y = $4 AND x.x = $5
                  AND ($6::int8 IS NULL OR EXISTS (SELECT 1 FROM region_tiles WHERE region_id = $6 AND tile_id = x.id))
                """, [.int8(template), .int8(tile.pixelRatio), .int8(tile.z), .int8(tile.y), .int8(tile.x), PostgresValue(packID)])
        case .resource(let url, _):
            rows = try query("""
                SELECT \(columns) FROM resources x WHERE x.url = $1
                  AND ($2::int8 IS NULL OR EXISTS (SELECT 1 FROM region_resources WHERE region_id = $2 AND resource_id = x.id))
                """, [.text(url), PostgresValue(packID)])
        }
        guard let row = rows.first else { return nil }
        let id = try row.int64(0)
        let cache = HTTPCacheHeaders(expires: try row.int64OrNil(2), modified: try row.int64OrNil(4),
                                     etag: try row.stringOrNil(1), mustRevalidate: try row.bool(3))
        let body = try row.bytesOrNil(5).map { StoredBody(data: $0, compressed: try row.bool(6)) }
        onAccess?(key, id)
        return StoredResource(id: id, body: body, cache: cache, accessed: try row.int64(7))
    }

    public func storedResourceURLs(packID: Int64) throws -> Set<String> {
        Set(try query("""
            SELECT r.url FROM resources r JOIN region_resources rr ON rr.resource_id = r.id WHERE rr.region_id = $1
            """, [.int8(packID)]).map { try $0.string(0) })
    }

    /// The window's rows through the unique index (template, ratio, z, y, x): one range of it
    /// per row of the window, whatever else the zoom holds.
    public func tileWindow(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                           xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64,
                           version: TileVersion?) throws -> StoredTileWindow {
        var window = StoredTileWindow(linkedHere: try TileBitmap(xRange: xRange, yRange: yRange),
                                      linkable: try TileBitmap(xRange: xRange, yRange: yRange))
        guard let template = try templateID(urlTemplate) else { return window }
        for row in try query("""
            SELECT t.x::int8, t.y::int8, (t.expires IS NULL OR t.expires > $7),
                   EXISTS (SELECT 1 FROM region_tiles h WHERE h.region_id = $8 AND h.tile_id = t.id)
            FROM tiles t WHERE t.template_id = $1 AND t.pixel_ratio = $2 AND t.z = $3
              AND t.y BETWEEN $4 AND $5 AND t.x BETWEEN $6 AND $9
              AND (NOT $10 OR (t.etag IS NOT DISTINCT FROM $11 AND t.modified IS NOT DISTINCT FROM $12))
            """, [.int8(template), .int8(pixelRatio), .int8(z), .int8(yRange.lowerBound), .int8(yRange.upperBound),
                  .int8(xRange.lowerBound), .int8(now), .int8(packID), .int8(xRange.upperBound), .bool(version != nil),
                  PostgresValue(version?.etag), PostgresValue(version?.modified)]) {
            let (x, y) = (try row.int64(0), try row.int64(1))
            if try row.bool(3) {
                window.linkedHere.insert(x: x, y: y)
            } else if try row.bool(2) {
                window.linkable.insert(x: x, y: y)
            }
        }
        return window
    }

    public func resourceValidators(packID: Int64, afterRowID: Int64, limit: Int) throws -> [StoredValidators] {
        try query("""
            SELECT r.id, r.url, r.kind::int8, r.etag, r.modified, r.data IS NOT NULL
            FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
            WHERE rr.region_id = $1 AND rr.resource_id > $2 ORDER BY rr.resource_id LIMIT $3
            """, [.int8(packID), .int8(afterRowID), .int8(Int64(max(1, limit)))]).map(Self.resourceValidators)
    }

    public func tileValidators(packID: Int64, afterRowID: Int64, limit: Int) throws -> [StoredValidators] {
        try query("""
            SELECT t.id, tt.url_template, t.pixel_ratio::int8, t.z::int8, t.x::int8, t.y::int8, t.etag, t.modified,
                   t.data IS NOT NULL
            FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id JOIN tile_templates tt ON tt.id = t.template_id
            WHERE rt.region_id = $1 AND rt.tile_id > $2 ORDER BY rt.tile_id LIMIT $3
            """, [.int8(packID), .int8(afterRowID), .int8(Int64(max(1, limit)))]).map { row in
            StoredValidators(rowID: try row.int64(0),
                             key: .tile(TileKey(urlTemplate: try row.string(1), pixelRatio: try row.int64(2), z: try row.int64(3),
                                                x: try row.int64(4), y: try row.int64(5))),
                             etag: try row.stringOrNil(6), modified: try row.int64OrNil(7), hasBody: try row.bool(8))
        }
    }

    /// Tiles with content of `urlTemplates`, by tile id (see `SQLiteConnection.tileBodies`).
    public func tileBodies(packID: Int64, urlTemplates: [String], afterRowID: Int64, limit: Int,
                           maxBytes: Int) throws -> [StoredTileBody] {
        guard !urlTemplates.isEmpty else { return [] }
        let rows = try query("""
            SELECT t.id, tt.url_template, t.pixel_ratio::int8, t.z::int8, t.x::int8, t.y::int8, t.data, t.compressed
            FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id JOIN tile_templates tt ON tt.id = t.template_id
            WHERE rt.region_id = $1 AND rt.tile_id > $2 AND t.data IS NOT NULL AND tt.url_template = ANY($4)
            ORDER BY rt.tile_id LIMIT $3
            """, [.int8(packID), .int8(afterRowID), .int8(Int64(max(1, limit))), .textArray(urlTemplates)])
        var page: [StoredTileBody] = []
        var bytes = 0
        for row in rows where bytes <= maxBytes {
            let data = try row.bytes(6)
            bytes += data.count
            page.append(StoredTileBody(
                rowID: try row.int64(0),
                key: TileKey(urlTemplate: try row.string(1), pixelRatio: try row.int64(2), z: try row.int64(3),
                             x: try row.int64(4), y: try row.int64(5)),
                body: StoredBody(data: data, compressed: try row.bool(7))))
        }
        return page
    }

    /// See `SQLiteConnection.storedSizes`.
    public func storedSizes(urls: [String]) throws -> [String: Int64] {
        guard !urls.isEmpty else { return [:] }
        var sizes: [String: Int64] = [:]
        for row in try query("SELECT url, octet_length(data)::int8 FROM resources WHERE data IS NOT NULL AND url = ANY($1)",
                             [.textArray(urls)]) {
            sizes[try row.string(0)] = try row.int64(1)
        }
        return sizes
    }

    /// Every style and TileJSON (at most `limit`), the first sprite JSON and the first glyph
    /// range by URL (see `SQLiteConnection.updateProbes`).
    public func updateProbes(packID: Int64, limit: Int) throws -> [StoredValidators] {
        let columns = "r.id, r.url, r.kind::int8, r.etag, r.modified, r.data IS NOT NULL"
        let linked = "FROM region_resources rr JOIN resources r ON r.id = rr.resource_id WHERE rr.region_id = $1"
        return try query("""
            (SELECT \(columns) \(linked) AND r.kind IN (1, 2) ORDER BY r.id LIMIT $2)
            UNION ALL (SELECT \(columns) \(linked) AND r.kind = 6 ORDER BY r.url COLLATE "C" LIMIT 1)
            UNION ALL (SELECT \(columns) \(linked) AND r.kind = 4 ORDER BY r.url COLLATE "C" LIMIT 1)
            """, [.int8(packID), .int8(Int64(max(1, limit)))]).map(Self.resourceValidators)
    }

    private static func resourceValidators(_ row: PostgresRow) throws -> StoredValidators {
        StoredValidators(rowID: try row.int64(0),
                         key: .resource(url: try row.string(1), kind: ResourceKind(rawValue: Int(try row.int64(2))) ?? .image),
                         etag: try row.stringOrNil(3), modified: try row.int64OrNil(4), hasBody: try row.bool(5))
    }

    public func tileSizeSample(urlTemplate: String, pixelRatio: Int64, z: Int64, limit: Int) throws -> (tiles: Int64, bytes: Int64) {
        guard let template = try templateID(urlTemplate) else { return (0, 0) }
        let row = try query("""
            SELECT count(*)::int8, coalesce(sum(octet_length(data)), 0)::int8 FROM
              (SELECT data FROM tiles WHERE template_id = $1 AND pixel_ratio = $2 AND z = $3 LIMIT $4) sample
            """, [.int8(template), .int8(pixelRatio), .int8(z), .int8(Int64(limit))]).first
        return (try row?.int64(0) ?? 0, try row?.int64(1) ?? 0)
    }

    // MARK: Linking rows stored elsewhere

    public func linkFreshTiles(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64, spans: [[Int64]],
                               xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64) throws -> Linked<TileBitmap> {
        var linked = try TileBitmap(xRange: xRange, yRange: yRange)
        let runs = spans.filter { $0.count == 3 }
        guard !runs.isEmpty else { return Linked(rows: linked, progress: nil) }
        return try transaction {
            guard try isPackHeld(packID) else { return Linked(rows: linked, progress: nil) }
            guard let template = try templateID(urlTemplate) else { return Linked(rows: linked, progress: try progress(packID)) }
            var candidates: [(id: Int64, x: Int64, y: Int64, size: Int64)] = []
            for row in try query("""
                SELECT t.id, t.x::int8, t.y::int8, coalesce(octet_length(t.data), 0)::int8
                FROM unnest($1::int8[], $2::int8[], $3::int8[]) AS s(y, x0, x1)
                JOIN tiles t ON t.template_id = $4 AND t.pixel_ratio = $5 AND t.z = $6 AND t.y = s.y AND t.x BETWEEN s.x0 AND s.x1
                WHERE (t.expires IS NULL OR t.expires > $7)
                  AND NOT EXISTS (SELECT 1 FROM region_tiles h WHERE h.region_id = $8 AND h.tile_id = t.id)
                ORDER BY t.id FOR UPDATE OF t
                """, [.int8Array(runs.map { $0[0] }), .int8Array(runs.map { $0[1] }), .int8Array(runs.map { $0[2] }),
                      .int8(template), .int8(pixelRatio), .int8(z), .int8(now), .int8(packID)]) {
                candidates.append((try row.int64(0), try row.int64(1), try row.int64(2), try row.int64(3)))
            }
            guard !candidates.isEmpty else { return Linked(rows: linked, progress: try progress(packID)) }
            let elsewhere = Set(try query(StoredTable.tiles.linkedAmongSQL, [.int8Array(candidates.map(\.id))])
                .map { try $0.int64(0) })
            let newAnywhere = Int64(candidates.count(where: { !elsewhere.contains($0.id) }))
            if newAnywhere > 0, let limit = try tileLimit() {
                try lockTileLimit()
                if try linkedTileCount() + newAnywhere > limit {
                    candidates.removeAll { !elsewhere.contains($0.id) }
                }
            }
            let keySize = Int64(urlTemplate.utf8.count)
            var delta = StoredProgress()
            var ambient: Int64 = 0
            var newlyLinked: Int64 = 0
            var unitTiles: [WorkUnitLeases.Key: Int64] = [:]
            let inserted = Set(try query(StoredTable.tiles.insertLinksSQL, [
                .int8Array(candidates.map { _ in packID }), .int8Array(candidates.map(\.id)),
            ]).map { try $0.int64(1) })
            for tile in candidates where inserted.contains(tile.id) {
                linked.insert(x: tile.x, y: tile.y)
                delta.addRow(size: tile.size, isTile: true)
                if !elsewhere.contains(tile.id) {
                    ambient -= tile.size + keySize
                    newlyLinked += 1
                }
                let key = TileKey(urlTemplate: urlTemplate, pixelRatio: pixelRatio, z: z, x: tile.x, y: tile.y)
                if let unit = units?.unit(pack: packID, tile: key) { unitTiles[unit, default: 0] += 1 }
            }
            try addLinked(delta, packID: packID)
            for (unit, tiles) in unitTiles { try WorkUnitLeases.addStoredTiles(tiles, to: unit, on: connection) }
            try addTotals(linkedTiles: newlyLinked, ambientBytes: ambient)
            return Linked(rows: linked, progress: try progress(packID))
        }
    }

    public func linkFreshResources(packID: Int64, urls: [String], now: Int64) throws -> Linked<Set<String>> {
        guard !urls.isEmpty else { return Linked(rows: [], progress: nil) }
        return try transaction {
            guard try isPackHeld(packID) else { return Linked(rows: [], progress: nil) }
            var candidates: [(id: Int64, url: String, size: Int64)] = []
            for row in try query("""
                SELECT r.id, r.url, coalesce(octet_length(r.data), 0)::int8 FROM resources r
                WHERE r.url = ANY($1) AND (r.expires IS NULL OR r.expires > $2)
                  AND NOT EXISTS (SELECT 1 FROM region_resources h WHERE h.region_id = $3 AND h.resource_id = r.id)
                ORDER BY r.id FOR UPDATE
                """, [.textArray(urls), .int8(now), .int8(packID)]) {
                candidates.append((try row.int64(0), try row.string(1), try row.int64(2)))
            }
            guard !candidates.isEmpty else { return Linked(rows: [], progress: try progress(packID)) }
            let elsewhere = Set(try query(StoredTable.resources.linkedAmongSQL, [.int8Array(candidates.map(\.id))])
                .map { try $0.int64(0) })
            let inserted = Set(try query(StoredTable.resources.insertLinksSQL, [
                .int8Array(candidates.map { _ in packID }), .int8Array(candidates.map(\.id)),
            ]).map { try $0.int64(1) })
            var linked: Set<String> = []
            var delta = StoredProgress()
            var ambient: Int64 = 0
            for resource in candidates where inserted.contains(resource.id) {
                linked.insert(resource.url)
                delta.addRow(size: resource.size, isTile: false)
                if !elsewhere.contains(resource.id) { ambient -= resource.size + Int64(resource.url.utf8.count) }
            }
            try addLinked(delta, packID: packID)
            try addTotals(linkedTiles: 0, ambientBytes: ambient)
            return Linked(rows: linked, progress: try progress(packID))
        }
    }

    /// Whether the pack exists, holding its row `FOR KEY SHARE` (a delete waits for the link).
    func isPackHeld(_ packID: Int64) throws -> Bool {
        try scalar("SELECT 1::int8 FROM packd_packs WHERE region_id = $1 FOR KEY SHARE", [.int8(packID)]) != nil
    }

    public func storeInAmbientCache(_ write: ResourceWrite, now: Int64) throws -> Bool {
        guard case .resource(let url, _) = write.key else { return false }
        if try maximumAmbientCacheSize() == 0, try scalar("""
            SELECT 1::int8 FROM region_resources JOIN resources ON resources.id = resource_id WHERE url = $1 LIMIT 1
            """, [.text(url)]) == nil {
            return false
        }
        let outcome = apply([write], now: now)
        if let error = outcome.error { throw error }
        return true
    }
}
