import CSQLite
import Packs
import Writer

/// packd's read-write view of the database: resource/tile upserts with their pack links and
/// progress, pack bookkeeping and the ambient cache. Owned by the `WriterThread` (one instance,
/// one connection), so nothing here locks; every statement is prepared once and cached.
public final class OfflineDatabase {
    public let database: Database
    /// Maximum bytes of ambient (unlinked) rows; 0 disables the ambient cache.
    public internal(set) var maximumAmbientCacheSize: Int64
    /// Maximum distinct tiles linked to any pack; nil: unlimited.
    public internal(set) var linkedTileLimit: Int64?

    public static let defaultMaximumAmbientCacheSize: Int64 = 50 << 20
    /// Versions kept per pack (`--keep-versions`); older ones are forgotten when a new one is cut.
    public var keepVersions = 3
    /// What "now" is for writes that are not told (an import's times).
    public var clock: WallClock = .system

    /// The writer's page cache: 16 MiB, not SQLite's 2 MiB. Every tile body passes through the
    /// cache as fresh overflow pages and pushed out the b-tree and index pages the next insert
    /// needs, which the writer then read back from the WAL (perf: a fifth of its time in pread).
    /// Measured on 50,000 × 20 KiB: 156 → 134-144 µs of CPU a tile, +5-10 % tiles/s.
    static let pageCacheKiB = 16 << 10

    /// Current ambient size (see `OfflineDatabase+AmbientCache`), counted once at open and then
    /// maintained by every write, so trimming never scans the tables.
    public internal(set) var ambientCacheSize: Int64 = 0

    /// `pageSize`: see `SchemaMigrator.openWriter`; only used when the file is created.
    public init(path: String, pageSize: Int? = nil) throws {
        database = try SchemaMigrator.openWriter(path: path, pageSize: pageSize)
        try database.execute("PRAGMA cache_size = -\(Self.pageCacheKiB)")
        maximumAmbientCacheSize = Self.defaultMaximumAmbientCacheSize
        linkedTileLimit = nil
        if let stored = try database.scalarInt("SELECT value FROM packd_meta WHERE key = 'ambient_cache_maximum'") {
            maximumAmbientCacheSize = stored
        }
        linkedTileLimit = try database.scalarInt("SELECT value FROM packd_meta WHERE key = 'tile_limit'")
        ambientCacheSize = try recountAmbientCacheSize()
    }

    // MARK: Batches

    /// Applies `writes` in ONE transaction: upserts (ids stable: update, else insert, as
    /// MapLibre's `putResource`/`putTile`), links, progress rows, the global tile count, and the
    /// ambient cache trim when ambient rows were written — then `operations`, the facts that ride
    /// the batch (failures, events, expected counts, state changes), in submission order, each in
    /// a savepoint of its own. All or nothing: a rolled-back batch takes its operations with it.
    public func apply(_ writes: [ResourceWrite], operations: [(OfflineDatabase) -> Void] = [], now: Int64,
                      touches: AccessTouches = AccessTouches()) -> BatchOutcome {
        var outcome = BatchOutcome()
        let ambientBefore = ambientCacheSize
        do {
            try database.transaction {
                try applyAccessTouches(touches, now: now)
                var deltas: [Int64: StoredProgress] = [:]
                var newlyLinkedTiles: Int64 = 0
                var livePacks: [Int64: Bool] = [:]
                var packVersions: [Int64: Int64] = [:]
                var linkedTiles = try database.scalarInt("SELECT linked_tiles FROM packd_totals WHERE id = 1") ?? 0
                for write in writes {
                    guard let row = try upsert(write, now: now) else {
                        outcome.missing.append(write.key)
                        continue
                    }
                    outcome.appliedWrites += 1
                    guard let packID = write.packID, try isLivePack(packID, cache: &livePacks) else { continue }
                    switch try link(row, isTile: write.key.isTile, packID: packID, linkedTiles: linkedTiles) {
                    case .alreadyLinked:
                        break
                    case .refusedByTileLimit:
                        outcome.tileLimitExceeded.insert(packID)
                    case .linked(let firstLinkAnywhere):
                        deltas[packID, default: StoredProgress()].add(row: row, isTile: write.key.isTile)
                        // New to a pack that has a version: part of its next one.
                        if try packVersion(packID, cache: &packVersions) > 0 {
                            try recordChange(rowID: row.id, isTile: write.key.isTile)
                        }
                        if firstLinkAnywhere { ambientCacheSize -= row.size + row.keySize }
                        if firstLinkAnywhere && write.key.isTile {
                            newlyLinkedTiles += 1
                            linkedTiles += 1
                        }
                    }
                }
                for (packID, delta) in deltas {
                    try addLinked(delta, packID: packID)
                }
                if newlyLinkedTiles != 0 {
                    try database.execute("UPDATE packd_totals SET linked_tiles = linked_tiles + ?1 WHERE id = 1",
                                         [.integer(newlyLinkedTiles)])
                }
                outcome.linkedTiles = linkedTiles
                for operation in operations { operation(self) }
                for packID in Set(writes.compactMap(\.packID)) where livePacks[packID] == true {
                    outcome.progress[packID] = try progress(packID)
                }
                try trimAmbientCache()
            }
        } catch {
            ambientCacheSize = ambientBefore // rolled back with the rows
            outcome = BatchOutcome()
            outcome.error = (error as? DatabaseError ?? DatabaseError(code: SQLITE_ERROR, message: "\(error)")).storeError
            outcome.failedPackIDs = Set(writes.compactMap(\.packID))
        }
        return outcome
    }

    /// A stored row as the batch saw it: its id and the size change the write caused.
    struct StoredRow {
        var id: Int64
        var size: Int64
        var sizeDelta: Int64
        /// Bytes of the URL or URL template, part of the row's ambient size.
        var keySize: Int64
        /// Inserted by this write: no pack can link it yet.
        var isNew: Bool
    }

    /// Upserts one row; nil when a revalidation or link names a row that does not exist.
    /// A body is inserted first (`ON CONFLICT DO NOTHING`): a download mostly writes new rows,
    /// which then cost one statement; only a conflict pays the lookup and the update by id.
    func upsert(_ write: ResourceWrite, now: Int64) throws -> StoredRow? {
        let isTile = write.key.isTile
        let keySize = write.key.ambientKeySize
        let body: StoredBody?
        switch write.content {
        case .linkExisting:
            return try find(write.key).map { StoredRow(id: $0.id, size: $0.size, sizeDelta: 0, keySize: keySize, isNew: false) }
        case .notModified:
            guard let existing = try find(write.key) else { return nil }
            try database.execute(isTile
                ? "UPDATE tiles SET accessed = ?1, expires = ?2, must_revalidate = ?3 WHERE id = ?4"
                : "UPDATE resources SET accessed = ?1, expires = ?2, must_revalidate = ?3 WHERE id = ?4",
                [.integer(now), DatabaseValue(write.cache.expires), DatabaseValue(write.cache.mustRevalidate), .integer(existing.id)])
            return StoredRow(id: existing.id, size: existing.size, sizeDelta: 0, keySize: keySize, isNew: false)
        case .unchangedBody:
            guard let existing = try find(write.key) else { return nil }
            let statement = try database.cachedStatement(isTile
                ? "UPDATE tiles SET modified = ?1, etag = ?2, expires = ?3, must_revalidate = ?4, accessed = ?5 WHERE id = ?6"
                : "UPDATE resources SET modified = ?1, etag = ?2, expires = ?3, must_revalidate = ?4, accessed = ?5 WHERE id = ?6")
            statement.reset()
            try statement.bind(write.cache.modified, at: 1)
            try statement.bind(write.cache.etag, at: 2)
            try statement.bind(write.cache.expires, at: 3)
            try statement.bind(write.cache.mustRevalidate, at: 4)
            try statement.bind(now, at: 5)
            try statement.bind(existing.id, at: 6)
            try statement.step()
            statement.reset()
            return StoredRow(id: existing.id, size: existing.size, sizeDelta: 0, keySize: keySize, isNew: false)
        case .body(let stored):
            body = stored
        case .noContent:
            body = nil
        }
        let size = Int64(body?.storedSize ?? 0)
        if try insert(write, body: body, now: now) {
            // A new row is ambient until (and unless) the link claims it.
            ambientCacheSize += size + keySize
            return StoredRow(id: database.lastInsertedRowID, size: size, sizeDelta: size, keySize: keySize, isNew: true)
        }
        guard let existing = try find(write.key) else { return nil }
        // A body over a stored row is taken as new content (a revalidation that found the same
        // content writes `unchangedBody`); no content over no content is no change.
        let changesContent = body != nil ? true : try hasBody(rowID: existing.id, isTile: isTile)
        let statement = try database.cachedStatement(isTile
            ? "UPDATE tiles SET modified = ?1, etag = ?2, expires = ?3, must_revalidate = ?4, accessed = ?5, data = ?6, compressed = ?7 WHERE id = ?8"
            : "UPDATE resources SET modified = ?1, etag = ?2, expires = ?3, must_revalidate = ?4, accessed = ?5, data = ?6, compressed = ?7, kind = ?9 WHERE id = ?8")
        statement.reset()
        try bindCacheColumns(statement, write.cache, now: now, body: body)
        try statement.bind(existing.id, at: 8)
        if case .resource(_, let kind) = write.key { try statement.bind(Int64(kind.rawValue), at: 9) }
        try statement.step()
        statement.reset()
        if changesContent { try recordChange(rowID: existing.id, isTile: isTile) }
        let delta = size - existing.size
        if delta != 0 {
            try adjustLinkedProgress(rowID: existing.id, isTile: isTile, by: delta)
            if try !isLinked(rowID: existing.id, isTile: isTile) { ambientCacheSize += delta }
        }
        return StoredRow(id: existing.id, size: size, sizeDelta: delta, keySize: keySize, isNew: false)
    }

    /// Inserts the row unless its key exists; true when inserted.
    private func insert(_ write: ResourceWrite, body: StoredBody?, now: Int64) throws -> Bool {
        let statement: Statement
        switch write.key {
        case .tile(let tile):
            statement = try database.cachedStatement("""
                INSERT INTO tiles (modified, etag, expires, must_revalidate, accessed, data, compressed, url_template, pixel_ratio, z, x, y)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) ON CONFLICT (url_template, pixel_ratio, z, x, y) DO NOTHING
                """)
            statement.reset()
            try bindCacheColumns(statement, write.cache, now: now, body: body)
            try bindTileKey(statement, tile, from: 8)
        case .resource(let url, let kind):
            statement = try database.cachedStatement("""
                INSERT INTO resources (modified, etag, expires, must_revalidate, accessed, data, compressed, url, kind)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (url) DO NOTHING
                """)
            statement.reset()
            try bindCacheColumns(statement, write.cache, now: now, body: body)
            try statement.bind(url, at: 8)
            try statement.bind(Int64(kind.rawValue), at: 9)
        }
        try statement.step()
        statement.reset()
        return database.changes == 1
    }

    /// The row's id and stored size, through the UNIQUE index MapLibre's schema defines.
    func find(_ key: ResourceKey) throws -> (id: Int64, size: Int64)? {
        let statement: Statement
        switch key {
        case .tile(let tile):
            statement = try database.cachedStatement(
                "SELECT id, IFNULL(LENGTH(data), 0) FROM tiles WHERE url_template = ?1 AND pixel_ratio = ?2 AND z = ?3 AND x = ?4 AND y = ?5")
            statement.reset()
            try bindTileKey(statement, tile, from: 1)
        case .resource(let url, _):
            statement = try database.cachedStatement("SELECT id, IFNULL(LENGTH(data), 0) FROM resources WHERE url = ?1")
            statement.reset()
            try statement.bind(url, at: 1)
        }
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return (statement.int64(at: 0), statement.int64(at: 1))
    }

    private func bindCacheColumns(_ statement: Statement, _ cache: HTTPCacheHeaders, now: Int64, body: StoredBody?) throws {
        try statement.bind(cache.modified, at: 1)
        try statement.bind(cache.etag, at: 2)
        try statement.bind(cache.expires, at: 3)
        try statement.bind(cache.mustRevalidate, at: 4)
        try statement.bind(now, at: 5)
        if let body {
            try statement.bind(blob: body.data, at: 6)
            try statement.bind(body.compressed, at: 7)
        } else {
            try statement.bindNull(at: 6)
            try statement.bind(false, at: 7)
        }
    }

    private func bindTileKey(_ statement: Statement, _ tile: TileKey, from index: Int32) throws {
        try statement.bind(tile.urlTemplate, at: index)
        try statement.bind(tile.pixelRatio, at: index + 1)
        try statement.bind(tile.z, at: index + 2)
        try statement.bind(tile.x, at: index + 3)
        try statement.bind(tile.y, at: index + 4)
    }

    /// A re-downloaded body of another size changes `SUM(LENGTH(data))` of every pack linking it.
    private func adjustLinkedProgress(rowID: Int64, isTile: Bool, by delta: Int64) throws {
        try database.execute(isTile
            ? "UPDATE packd_progress SET completed_bytes = completed_bytes + ?1, completed_tile_bytes = completed_tile_bytes + ?1 WHERE pack_id IN (SELECT region_id FROM region_tiles WHERE tile_id = ?2)"
            : "UPDATE packd_progress SET completed_bytes = completed_bytes + ?1 WHERE pack_id IN (SELECT region_id FROM region_resources WHERE resource_id = ?2)",
            [.integer(delta), .integer(rowID)])
    }

    func isLinked(rowID: Int64, isTile: Bool) throws -> Bool {
        try database.scalarInt(isTile
            ? "SELECT EXISTS (SELECT 1 FROM region_tiles WHERE tile_id = ?1)"
            : "SELECT EXISTS (SELECT 1 FROM region_resources WHERE resource_id = ?1)", [.integer(rowID)]) == 1
    }

    enum LinkResult {
        case alreadyLinked
        case refusedByTileLimit
        /// `firstLinkAnywhere`: no other pack linked the row before (it was ambient).
        case linked(firstLinkAnywhere: Bool)
    }

    /// Links a row to a pack (MapLibre's `markUsed`), refusing a tile that would be one more
    /// distinct pack tile than the global limit allows.
    func link(_ row: StoredRow, isTile: Bool, packID: Int64, linkedTiles: Int64) throws -> LinkResult {
        let (linkedAnywhere, linkedHere) = row.isNew ? (false, false) : try existingLinks(row.id, isTile: isTile, packID: packID)
        if linkedHere { return .alreadyLinked }
        if isTile, !linkedAnywhere, let linkedTileLimit, linkedTiles >= linkedTileLimit { return .refusedByTileLimit }
        try database.execute(isTile
            ? "INSERT INTO region_tiles (region_id, tile_id) VALUES (?1, ?2)"
            : "INSERT INTO region_resources (region_id, resource_id) VALUES (?1, ?2)",
            [.integer(packID), .integer(row.id)])
        return .linked(firstLinkAnywhere: !linkedAnywhere)
    }

    /// Whether any pack, and whether `packID`, links the row.
    private func existingLinks(_ rowID: Int64, isTile: Bool, packID: Int64) throws -> (anywhere: Bool, here: Bool) {
        let links = try database.cachedStatement(isTile
            ? "SELECT count(*), IFNULL(SUM(region_id = ?2), 0) FROM region_tiles WHERE tile_id = ?1"
            : "SELECT count(*), IFNULL(SUM(region_id = ?2), 0) FROM region_resources WHERE resource_id = ?1")
        links.reset()
        try links.bind(rowID, at: 1)
        try links.bind(packID, at: 2)
        try links.step()
        defer { links.reset() }
        return (links.int64(at: 0) > 0, links.int64(at: 1) > 0)
    }

    /// Whether `packID` names an existing pack; rows for a removed pack are kept as ambient
    /// instead of failing the whole batch on the foreign key.
    private func isLivePack(_ packID: Int64, cache: inout [Int64: Bool]) throws -> Bool {
        if let known = cache[packID] { return known }
        let live = try database.scalarInt("SELECT count(*) FROM packd_packs WHERE region_id = ?1", [.integer(packID)]) ?? 0 > 0
        cache[packID] = live
        return live
    }

    /// The stored progress row of a pack (zeros if it has none).
    public func progress(_ packID: Int64) throws -> StoredProgress {
        try ProgressQueries.stored(packID, in: database) ?? StoredProgress()
    }
}

extension StoredProgress {
    mutating func add(row: OfflineDatabase.StoredRow, isTile: Bool) {
        completedResources += 1
        completedBytes += row.size
        if isTile {
            completedTiles += 1
            completedTileBytes += row.size
        }
    }
}
