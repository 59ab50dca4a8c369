/// A read-only connection for queries: pack progress, the resume bitmaps, resource reads.
/// One per thread (API reads run on libuv's pool); WAL lets it read while the writer commits.
public final class StoreReader {
    public let database: Database
    private let onAccess: (@Sendable (ResourceKey, Int64) -> Void)?

    /// `onAccess` receives the id of every row read with `resource`/`tile`, for batched
    /// `accessed` updates (pass `WriterThread.touch`).
    public init(path: String, onAccess: (@Sendable (ResourceKey, Int64) -> Void)? = nil) throws {
        database = try Database(path: path, mode: .readOnly)
        try database.execute("PRAGMA query_only = ON")
        self.onAccess = onAccess
    }

    // MARK: Packs and progress

    public func progress(_ packID: Int64) throws -> PackProgress? {
        try ProgressQueries.stored(packID, in: database)
    }

    public func recountProgress(_ packID: Int64) throws -> PackProgress {
        try ProgressQueries.recount(packID, in: database)
    }

    public func pack(_ packID: Int64) throws -> PackRecord? {
        let statement = try database.cachedStatement(PackRecord.selectSQL + " WHERE p.region_id = ?1")
        try statement.bind([.integer(packID)])
        defer { statement.reset() }
        return try statement.step() ? PackRecord(row: statement) : nil
    }

    /// Packs in creation (id) order after `afterID`, optionally of one state and whose name
    /// contains `nameContains` ignoring ASCII case (literal: no LIKE wildcards); `limit` ≤ 500.
    public func packs(after afterID: Int64 = 0, state: String? = nil, nameContains: String? = nil,
                      limit: Int = 100) throws -> [PackRecord] {
        let statement = try database.cachedStatement(PackRecord.selectSQL + """
             WHERE p.region_id > ?1 AND (?2 IS NULL OR p.state = ?2) AND (?3 IS NULL OR instr(lower(p.name), lower(?3)) > 0)
            ORDER BY p.region_id LIMIT ?4
            """)
        var result: [PackRecord] = []
        try statement.forEachRow([.integer(afterID), DatabaseValue(state), DatabaseValue(nameContains),
                                  .integer(Int64(min(max(limit, 0), 500)))]) {
            result.append(PackRecord(row: $0))
        }
        return result
    }

    /// Events with ids above `afterID` (all packs, or one), oldest first.
    public func events(after afterID: Int64, packID: Int64? = nil, limit: Int = 1000) throws -> [StoredEvent] {
        var result: [StoredEvent] = []
        try database.cachedStatement("""
            SELECT id, pack_id, type, data, created_at FROM packd_events
            WHERE id > ?1 AND (?2 IS NULL OR pack_id = ?2) ORDER BY id LIMIT ?3
            """).forEachRow([.integer(afterID), DatabaseValue(packID), .integer(Int64(min(max(limit, 0), 10_000)))]) {
            result.append(StoredEvent(id: $0.int64(at: 0), packID: $0.optionalInt64(at: 1), type: $0.string(at: 2) ?? "",
                                      json: $0.string(at: 3) ?? "", createdAt: $0.int64(at: 4)))
        }
        return result
    }

    /// The oldest event id still held (replay from before it is impossible), nil when empty.
    public func oldestEventID() throws -> Int64? {
        try database.scalarInt("SELECT min(id) FROM packd_events")
    }

    /// The pack's failed resources, newest first.
    public func failures(packID: Int64, limit: Int = 1000) throws -> [ResourceFailure] {
        var result: [ResourceFailure] = []
        try database.cachedStatement("""
            SELECT id, url, status, message, attempts, at FROM packd_errors WHERE pack_id = ?1 ORDER BY id DESC LIMIT ?2
            """).forEachRow([.integer(packID), .integer(Int64(min(max(limit, 0), 1000)))]) {
            result.append(ResourceFailure(id: $0.int64(at: 0), url: $0.string(at: 1) ?? "", status: $0.optionalInt64(at: 2),
                                          message: $0.string(at: 3) ?? "", attempts: $0.int64(at: 4), at: $0.int64(at: 5)))
        }
        return result
    }

    public func idempotencyEntry(_ key: String) throws -> IdempotencyEntry? {
        var entry: IdempotencyEntry?
        try database.cachedStatement("SELECT request_hash, pack_id, status, body, created_at FROM packd_idempotency WHERE key = ?1")
            .forEachRow([.text(key)]) {
                entry = IdempotencyEntry(requestHash: $0.string(at: 0) ?? "", packID: $0.optionalInt64(at: 1),
                                         status: $0.int64(at: 2), body: $0.blob(at: 3) ?? [], createdAt: $0.int64(at: 4))
            }
        return entry
    }

    public func packCount() throws -> Int64 {
        try database.scalarInt("SELECT count(*) FROM packd_packs") ?? 0
    }

    /// Packs per state, for the packs-by-state gauge.
    public func packCountsByState() throws -> [String: Int] {
        var counts: [String: Int] = [:]
        try database.cachedStatement("SELECT state, count(*) FROM packd_packs GROUP BY state").forEachRow([]) {
            counts[$0.string(at: 0) ?? ""] = Int($0.int64(at: 1))
        }
        return counts
    }

    /// The most tiles all packs together may hold, nil when unlimited.
    public func tileLimit() throws -> Int64? {
        try database.scalarInt("SELECT value FROM packd_meta WHERE key = 'tile_limit'")
    }

    /// The largest event id this database ever handed out (0 for a new one); deleted rows keep
    /// their ids reserved by AUTOINCREMENT, so ids never repeat across restarts.
    public func lastEventID() throws -> Int64 {
        try database.scalarInt("SELECT seq FROM sqlite_sequence WHERE name = 'packd_events'") ?? 0
    }

    /// Distinct tiles linked to any pack (maintained, one row read).
    public func linkedTileCount() throws -> Int64 {
        try database.scalarInt("SELECT linked_tiles FROM packd_totals WHERE id = 1") ?? 0
    }

    /// Counted from the tables (a scan); the writer's `OfflineDatabase.ambientCacheSize` is the cheap value.
    public func ambientCacheSize() throws -> Int64 {
        try database.scalarInt(OfflineDatabase.ambientSizeSQL) ?? 0
    }

    /// Bytes of every stored body (`LENGTH(data)`), packs and cache.
    public func storedBytes() throws -> Int64 {
        try database.scalarInt("""
            SELECT (SELECT IFNULL(SUM(LENGTH(data)), 0) FROM tiles) + (SELECT IFNULL(SUM(LENGTH(data)), 0) FROM resources)
            """) ?? 0
    }

    // MARK: Resume answers

    /// The tiles of `window` at zoom `z` of one source already linked to `packID`: one query
    /// per window, driven by the `tiles` UNIQUE index over (url_template, pixel_ratio, z, x).
    public func storedTiles(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                            xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>) throws -> TileBitmap {
        var bitmap = try TileBitmap(xRange: xRange, yRange: yRange)
        // The unique index is (url_template, pixel_ratio, z, x, y): with `x BETWEEN` and `y BETWEEN`
        // SQLite seeks the x range and then walks every y of each column — the whole zoom for a
        // band of a few wide rows, so banding a big region was quadratic. One seek per column
        // (the CTE, forced outermost by CROSS JOIN) reads only the window's own rows.
        let window = try database.cachedStatement("""
            WITH RECURSIVE columns(x) AS (SELECT ?4 UNION ALL SELECT x + 1 FROM columns WHERE x < ?5)
            SELECT tiles.id, tiles.x, tiles.y FROM columns CROSS JOIN tiles
            WHERE tiles.url_template = ?1 AND tiles.pixel_ratio = ?2 AND tiles.z = ?3 AND tiles.x = columns.x
              AND tiles.y BETWEEN ?6 AND ?7
            """)
        var rows: [(id: Int64, x: Int64, y: Int64)] = []
        var lowest = Int64.max
        var highest = Int64.min
        try window.forEachRow([.text(urlTemplate), .integer(pixelRatio), .integer(z), .integer(xRange.lowerBound),
                               .integer(xRange.upperBound), .integer(yRange.lowerBound), .integer(yRange.upperBound)]) {
            let id = $0.int64(at: 0)
            rows.append((id, $0.int64(at: 1), $0.int64(at: 2)))
            lowest = min(lowest, id)
            highest = max(highest, id)
        }
        guard !rows.isEmpty else { return bitmap }
        // Which of them this pack links. A window's rows were mostly written together, so their
        // ids are close: one range scan of the pack's links beats a B-tree seek per row (a resume
        // with 900,000 tiles stored reads them all before its first request). Scattered ids
        // (rows shared with older packs) fall back to a seek per row.
        if highest - lowest <= Int64(rows.count) * 4 + 4096 {
            var linked = Set<Int64>(minimumCapacity: rows.count)
            try database.cachedStatement("""
                SELECT tile_id FROM region_tiles WHERE region_id = ?1 AND tile_id BETWEEN ?2 AND ?3
                """).forEachRow([.integer(packID), .integer(lowest), .integer(highest)]) { linked.insert($0.int64(at: 0)) }
            for row in rows where linked.contains(row.id) { bitmap.insert(x: row.x, y: row.y) }
        } else {
            let link = try database.cachedStatement("SELECT 1 FROM region_tiles WHERE region_id = ?1 AND tile_id = ?2")
            for row in rows where try link.scalarInt([.integer(packID), .integer(row.id)]) != nil {
                bitmap.insert(x: row.x, y: row.y)
            }
        }
        return bitmap
    }

    /// The tiles of `window` stored anywhere (another pack or the ambient cache) and fresh at
    /// `now`: the download links these (`ResourceWrite.Content.linkExisting`) instead of fetching.
    public func freshTiles(urlTemplate: String, pixelRatio: Int64, z: Int64,
                           xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64) throws -> TileBitmap {
        var bitmap = try TileBitmap(xRange: xRange, yRange: yRange)
        let statement = try database.cachedStatement("""
            SELECT x, y FROM tiles
            WHERE url_template = ?1 AND pixel_ratio = ?2 AND z = ?3 AND x BETWEEN ?4 AND ?5 AND y BETWEEN ?6 AND ?7
              AND (expires IS NULL OR expires > ?8)
            """)
        try statement.forEachRow([.text(urlTemplate), .integer(pixelRatio), .integer(z), .integer(xRange.lowerBound),
                                  .integer(xRange.upperBound), .integer(yRange.lowerBound), .integer(yRange.upperBound),
                                  .integer(now)]) {
            bitmap.insert(x: $0.int64(at: 0), y: $0.int64(at: 1))
        }
        return bitmap
    }

    /// URLs of non-tile resources already linked to the pack.
    public func storedResourceURLs(packID: Int64) throws -> Set<String> {
        var urls: Set<String> = []
        try database.cachedStatement("""
            SELECT url FROM resources JOIN region_resources ON resource_id = resources.id WHERE region_id = ?1
            """).forEachRow([.integer(packID)]) { urls.insert($0.string(at: 0) ?? "") }
        return urls
    }

    // MARK: Reading rows

    /// Reads a stored resource or tile (MapLibre's `getResource`/`getTile` columns) and reports
    /// the access for the batched `accessed` update. With `packID`, only a row linked to that pack
    /// is found (serving a pack offline: a row held only by another pack or the ambient cache is
    /// not part of it).
    public func read(_ key: ResourceKey, linkedTo packID: Int64? = nil) throws -> StoredResource? {
        let statement: Statement
        let link: [DatabaseValue] = packID.map { [.integer($0)] } ?? []
        switch key {
        case .tile(let tile):
            statement = try database.cachedStatement("""
                SELECT id, etag, expires, must_revalidate, modified, data, compressed, accessed FROM tiles
                WHERE url_template = ?1 AND pixel_ratio = ?2 AND z = ?3 AND x = ?4 AND y = ?5
                """ + (packID == nil ? "" : " AND EXISTS (SELECT 1 FROM region_tiles WHERE region_id = ?6 AND tile_id = tiles.id)"))
            try statement.bind([.text(tile.urlTemplate), .integer(tile.pixelRatio), .integer(tile.z), .integer(tile.x), .integer(tile.y)]
                               + link)
        case .resource(let url, _):
            statement = try database.cachedStatement("""
                SELECT id, etag, expires, must_revalidate, modified, data, compressed, accessed FROM resources WHERE url = ?1
                """ + (packID == nil ? "" : " AND EXISTS (SELECT 1 FROM region_resources WHERE region_id = ?2 AND resource_id = resources.id)"))
            try statement.bind([.text(url)] + link)
        }
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let id = statement.int64(at: 0)
        let cache = HTTPCacheHeaders(expires: statement.optionalInt64(at: 2), modified: statement.optionalInt64(at: 4),
                                     etag: statement.string(at: 1), mustRevalidate: statement.int64(at: 3) != 0)
        let body = statement.blob(at: 5).map { StoredBody(data: $0, compressed: statement.int64(at: 6) != 0) }
        onAccess?(key, id)
        return StoredResource(id: id, body: body, cache: cache, accessed: statement.int64(at: 7))
    }
}
