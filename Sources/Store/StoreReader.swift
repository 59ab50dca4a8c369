import Packs

/// A read-only connection for queries: pack progress, the resume bitmaps, resource reads.
/// One per thread (API reads run on libuv's pool); WAL lets it read while the writer commits.
public final class StoreReader: SQLiteConnection, PackRepository, ResourceIndex, PackVersionRepository {
    public let database: Database
    private let onAccess: (@Sendable (ResourceKey, Int64) -> Void)?

    /// `onAccess` receives the id of every row read with `resource`/`tile`, for batched
    /// `accessed` updates (pass `WriterThread.touch`).
    public init(path: String, onAccess: (@Sendable (ResourceKey, Int64) -> Void)? = nil) throws {
        database = try Database(path: path, mode: .readOnly)
        try database.execute("PRAGMA query_only = ON")
        self.onAccess = onAccess
    }

    /// A stored resource or tile (see `storedRow`), reported to `onAccess` for the batched
    /// `accessed` update.
    public func resource(_ key: ResourceKey, linkedTo packID: Int64? = nil) throws -> StoredResource? {
        guard let row = try storedRow(key, linkedTo: packID) else { return nil }
        onAccess?(key, row.id)
        return row
    }

    /// Counted from the tables: the writer holds the maintained size.
    public func ambientCache() throws -> (size: Int64, maximumSize: Int64) {
        (try ambientCacheSize(), try database.scalarInt("SELECT value FROM packd_meta WHERE key = 'ambient_cache_maximum'")
            ?? OfflineDatabase.defaultMaximumAmbientCacheSize)
    }
}

/// The queries both connections answer — the readers on the thread pool and the writer inside its
/// transactions — so a read means the same on either.
extension SQLiteConnection {
    // MARK: Packs and progress

    public func progress(_ packID: Int64) throws -> StoredProgress? {
        try ProgressQueries.stored(packID, in: database)
    }

    public func recountProgress(_ packID: Int64) throws -> StoredProgress {
        try ProgressQueries.recount(packID, in: database)
    }

    public func pack(_ packID: Int64) throws -> PackRecord? {
        let statement = try database.cachedStatement(PackRecord.selectSQL + " WHERE p.region_id = ?1")
        try statement.bind([.integer(packID)])
        defer { statement.reset() }
        return try statement.step() ? try PackRecord(row: statement) : nil
    }

    /// Packs in creation (id) order after `afterID`, optionally of one state and whose name
    /// contains `nameContains` ignoring ASCII case (literal: no LIKE wildcards); `limit` ≤ 500.
    public func packs(after afterID: Int64 = 0, state: PackState? = nil, nameContains: String? = nil,
                      limit: Int = 100) throws -> [PackRecord] {
        let statement = try database.cachedStatement(PackRecord.selectSQL + """
             WHERE p.region_id > ?1 AND (?2 IS NULL OR p.state = ?2) AND (?3 IS NULL OR instr(lower(p.name), lower(?3)) > 0)
            ORDER BY p.region_id LIMIT ?4
            """)
        var result: [PackRecord] = []
        try statement.forEachRow([.integer(afterID), DatabaseValue(state?.rawValue), DatabaseValue(nameContains),
                                  .integer(Int64(min(max(limit, 0), 500)))]) {
            result.append(try PackRecord(row: $0))
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
    public func packCountsByState() throws -> [PackState: Int] {
        var counts: [PackState: Int] = [:]
        try database.cachedStatement("SELECT state, count(*) FROM packd_packs GROUP BY state").forEachRow([]) {
            if let state = PackState(rawValue: $0.string(at: 0) ?? "") { counts[state] = Int($0.int64(at: 1)) }
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

    /// Packs a restarted server continues: `active` first, then `queued`, each in creation order.
    public func scheduledPackIDs() throws -> [Int64] {
        var ids: [Int64] = []
        for state in [PackState.active, .queued] {
            var after: Int64 = 0
            while true {
                let page = try packs(after: after, state: state, nameContains: nil, limit: 500)
                guard let last = page.last else { break }
                ids += page.map(\.id)
                after = last.id
            }
        }
        return ids
    }

    /// Bytes of every stored body (`LENGTH(data)`), packs and cache.
    public func storedBytes() throws -> Int64 {
        try database.scalarInt("""
            SELECT (SELECT IFNULL(SUM(LENGTH(data)), 0) FROM tiles) + (SELECT IFNULL(SUM(LENGTH(data)), 0) FROM resources)
            """) ?? 0
    }

    // MARK: Resume answers

    /// The tiles of one window (one source, one zoom) the pack already links: what a download
    /// skips. The `linkedHere` half of `tileWindow`.
    public func storedTiles(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                            xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>) throws -> TileBitmap {
        try tileWindow(packID: packID, urlTemplate: urlTemplate, pixelRatio: pixelRatio, z: z,
                       xRange: xRange, yRange: yRange, now: 0, version: nil).linkedHere
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

    /// Reads a stored resource or tile (MapLibre's `getResource`/`getTile` columns). With
    /// `packID`, only a row linked to that pack is found (serving a pack offline: a row held only
    /// by another pack or the ambient cache is not part of it).
    func storedRow(_ key: ResourceKey, linkedTo packID: Int64?) throws -> StoredResource? {
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
        return StoredResource(id: id, body: body, cache: cache, accessed: statement.int64(at: 7))
    }
}
