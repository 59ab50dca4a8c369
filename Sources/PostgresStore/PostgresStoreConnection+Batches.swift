import Packs
import Postgres
import Writer

/// A batch of downloaded rows in ONE transaction, as `OfflineDatabase.apply` does it in SQLite
/// mode — upserts (ids stable), links, the packs' progress, the cluster-wide tile count and
/// ambient size, the ambient trim, then the operations riding the batch — but set-based: each
/// step is one statement over the whole batch's keys. Rows are locked in key order (the insert
/// and the locks before linking), so batches of two nodes touching the same rows wait for each
/// other instead of deadlocking, and a row another node stores or links meanwhile is seen.
extension PostgresStoreConnection {
    /// What the batch has done so far to what it reports.
    struct BatchTally {
        var outcome = BatchOutcome()
        var deltas: [Int64: StoredProgress] = [:]
        var livePacks: [Int64: Bool] = [:]
        /// Each live pack's version: a row newly linked to one that has a version is a change.
        var packVersions: [Int64: Int64] = [:]
        var newlyLinkedTiles: Int64 = 0
        var ambientDelta: Int64 = 0
        /// Tiles linked per held unit.
        var unitTiles: [WorkUnitLeases.Key: Int64] = [:]
        /// The distinct-tile count and limit, read once (under the limit's lock) when needed.
        var tileLimit: (limit: Int64, linked: Int64)??
    }

    /// A row as the batch saw it.
    struct BatchRow {
        var id: Int64
        /// Stored size after the write.
        var size: Int64
        var keySize: Int64
        /// Inserted by this batch: nobody can have linked it.
        var isNew: Bool
    }

    /// Applies `writes` and then `operations` in one transaction; all or nothing (nothing on
    /// error, with the packs that had writes in `failedPackIDs`).
    public func apply(_ writes: [ResourceWrite], operations: [(PostgresStoreConnection) -> Void] = [], now: Int64,
                      touches: AccessTouches = AccessTouches(), changesPacks: Bool = true) -> BatchOutcome {
        do {
            return try applyBatch(writes, operations: operations, now: now, touches: touches, changesPacks: changesPacks).outcome
        } catch {
            return Self.failedBatch(writes, error)
        }
    }

    /// What a batch that could not commit reports.
    static func failedBatch(_ writes: [ResourceWrite], _ error: any Error) -> BatchOutcome {
        var outcome = BatchOutcome()
        outcome.error = storeError(error)
        outcome.failedPackIDs = Set(writes.compactMap(\.packID))
        return outcome
    }

    /// `apply`, throwing the engine's error (the writer retries conflicts and broken connections),
    /// with the packs whose documents it changed (`takeChangedPacks`).
    func applyBatch(_ writes: [ResourceWrite], operations: [(PostgresStoreConnection) -> Void], now: Int64,
                    touches: AccessTouches, changesPacks: Bool) throws -> (outcome: BatchOutcome, changedPacks: Set<Int64>?) {
        do {
            return try transaction { () throws -> (outcome: BatchOutcome, changedPacks: Set<Int64>?) in
                // A batch applied inside another (an ambient store during an operation) leaves
                // the outer batch's events to it.
                let ownsEvents = batchEvents == nil
                if ownsEvents { batchEvents = [] }
                defer { if ownsEvents { batchEvents = nil } }
                try applyAccessTouches(touches, now: now)
                var tally = BatchTally()
                var segment: [ResourceWrite] = []
                var keys: Set<ResourceKey> = []
                for write in writes {
                    // A key written twice in one batch: the second write sees the first's row.
                    if !keys.insert(write.key).inserted {
                        try applySegment(segment, now: now, tally: &tally)
                        segment.removeAll(keepingCapacity: true)
                        keys = [write.key]
                    }
                    segment.append(write)
                }
                try applySegment(segment, now: now, tally: &tally)
                for (packID, delta) in tally.deltas.sorted(by: { $0.key < $1.key }) {
                    try addLinked(delta, packID: packID)
                }
                for (unit, tiles) in tally.unitTiles.sorted(by: { ($0.key.pack, $0.key.ordinal) < ($1.key.pack, $1.key.ordinal) }) {
                    try WorkUnitLeases.addStoredTiles(tiles, to: unit, on: connection)
                }
                try addTotals(linkedTiles: tally.newlyLinkedTiles, ambientBytes: tally.ambientDelta)
                for operation in operations { operation(self) }
                var outcome = tally.outcome
                for packID in Set(writes.compactMap(\.packID)) where tally.livePacks[packID] == true {
                    outcome.progress[packID] = try progress(packID) ?? StoredProgress()
                }
                if tally.ambientDelta > 0 { try trimAmbientCache() }
                if !writes.isEmpty { outcome.linkedTiles = try linkedTileCount() }
                let changedPacks = try takeChangedPacks(notify: changesPacks)
                // Last: the event lock is held from here to the commit.
                if ownsEvents { _ = try appendEvents(batchEvents ?? []) }
                return (outcome, changedPacks)
            }
        } catch {
            forgetUncommittedTemplates()
            throw error
        }
    }

    /// Queues an event to be appended at the end of the open batch (`apply`), or appends it now
    /// outside one.
    func queueEvent(_ event: StoredEvent) throws {
        if batchEvents != nil {
            batchEvents?.append(event)
        } else {
            _ = try appendEvents([event])
        }
    }

    /// Makes this session note the packs whose documents its transactions change (the writer's;
    /// see `PostgresSchema.changedPacksMigration`).
    func noteChangedPacks() throws {
        try connection.execute("SET packd.note_changed_packs = on")
    }

    /// The packs whose documents this session changed since the last call, forgotten. Every node
    /// hears which (`CommitChannel`: their rendered-pack caches are stale, their schedulers look
    /// for work) when there are any, or always with `notify`.
    func takeChangedPacks(notify: Bool) throws -> Set<Int64>? {
        let ids = try connection.scalarString("SELECT packd_take_changed_packs($1, $2, $3)",
                                              [.text(CommitChannel.name), .int8(node), .bool(notify)]) ?? ""
        return CommitChannel.packs(in: ids)
    }

    /// A store error in the terms the download layer acts on.
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? PostgresError {
            if error.isStorageFull { return StoreError(.storageFull, error.description) }
            return StoreError(.other, error.description)
        }
        return StoreError(.other, "\(error)")
    }

    func applyAccessTouches(_ touches: AccessTouches, now: Int64) throws {
        if !touches.tileIDs.isEmpty {
            try query("UPDATE tiles SET accessed = $1 WHERE id = ANY($2)", [.int8(now), .int8Array(touches.tileIDs.sorted())])
        }
        if !touches.resourceIDs.isEmpty {
            try query("UPDATE resources SET accessed = $1 WHERE id = ANY($2)",
                      [.int8(now), .int8Array(touches.resourceIDs.sorted())])
        }
    }

    /// Adds linked rows to the pack's maintained progress.
    func addLinked(_ delta: StoredProgress, packID: Int64) throws {
        try query("""
            UPDATE packd_progress SET completed_resources = completed_resources + $2,
              completed_bytes = completed_bytes + $3, completed_tiles = completed_tiles + $4,
              completed_tile_bytes = completed_tile_bytes + $5 WHERE pack_id = $1
            """, [.int8(packID), .int8(delta.completedResources), .int8(delta.completedBytes),
                  .int8(delta.completedTiles), .int8(delta.completedTileBytes)])
    }

    // MARK: One segment (no key twice)

    private func applySegment(_ writes: [ResourceWrite], now: Int64, tally: inout BatchTally) throws {
        guard !writes.isEmpty else { return }
        let templates = try ensureTemplateIDs(writes.compactMap { write -> String? in
            guard case .tile(let tile) = write.key else { return nil }
            switch write.content {
            case .body, .noContent: return tile.urlTemplate
            case .notModified, .unchangedBody, .linkExisting: return nil
            }
        })
        var rows = [BatchRow?](repeating: nil, count: writes.count)
        for table in [StoredTable.resources, .tiles] {
            let indices = writes.indices.filter { writes[$0].key.isTile == (table == .tiles) }
            guard !indices.isEmpty else { continue }
            try upsert(table, writes, indices, templates: templates, now: now, into: &rows, tally: &tally)
            try link(table, writes, indices, rows: rows, tally: &tally)
        }
        for (write, row) in zip(writes, rows) {
            if row == nil { tally.outcome.missing.append(write.key) } else { tally.outcome.appliedWrites += 1 }
        }
    }

    /// The key of each write as statement parameters (nil template: no such template stored).
    private func keyParameters(_ table: StoredTable, _ writes: [ResourceWrite], _ indices: [Int],
                               templates: [String: Int64]) throws -> [PostgresValue] {
        switch table {
        case .resources:
            return [.textArray(indices.map { index -> String? in
                guard case .resource(let url, _) = writes[index].key else { return nil }
                return url
            })]
        case .tiles:
            var columns: [[Int64?]] = Array(repeating: [], count: 5)
            for index in indices {
                guard case .tile(let tile) = writes[index].key else { continue }
                let template = try templates[tile.urlTemplate] ?? templateID(tile.urlTemplate)
                for (column, value) in [template, tile.pixelRatio, tile.z, tile.y, tile.x].enumerated() {
                    columns[column].append(value)
                }
            }
            return columns.map { .int8Array($0) }
        }
    }

    /// Looks up, inserts and updates the rows of `indices` (writes of one table), filling `rows`.
    private func upsert(_ table: StoredTable, _ writes: [ResourceWrite], _ indices: [Int], templates: [String: Int64],
                        now: Int64, into rows: inout [BatchRow?], tally: inout BatchTally) throws {
        func existing(_ among: [Int]) throws -> [Int: (id: Int64, size: Int64, hasBody: Bool)] {
            var found: [Int: (id: Int64, size: Int64, hasBody: Bool)] = [:]
            let keys = try keyParameters(table, writes, among, templates: templates)
            for row in try query(table.lookupSQL, keys) {
                found[among[Int(try row.int64(0)) - 1]] = (try row.int64(1), try row.int64(2), try row.bool(3))
            }
            return found
        }
        var stored = try existing(indices)
        // New bodies are inserted; a key inserted by another node meanwhile is updated instead.
        let inserts = indices.filter { index in
            guard stored[index] == nil else { return false }
            switch writes[index].content {
            case .body, .noContent: return true
            case .notModified, .unchangedBody, .linkExisting: return false
            }
        }
        if !inserts.isEmpty {
            let ordered = sortedByKey(table, writes, inserts)
            var parameters = try keyParameters(table, writes, ordered, templates: templates)
            parameters += cacheColumns(writes, ordered)
            parameters.append(.int8(now))
            if table == .resources { parameters.insert(kinds(writes, ordered), at: 7) }
            var inserted: Set<Int> = []
            for row in try query(table.insertSQL, parameters) {
                let index = ordered[Int(try row.int64(0)) - 1]
                inserted.insert(index)
                let size = Int64(writes[index].body?.storedSize ?? 0)
                let keySize = writes[index].key.ambientKeySize
                rows[index] = BatchRow(id: try row.int64(1), size: size, keySize: keySize, isNew: true)
                tally.ambientDelta += size + keySize
            }
            let raced = inserts.filter { !inserted.contains($0) }
            if !raced.isEmpty { stored.merge(try existing(raced)) { $1 } }
        }
        var replaced: [Int] = []
        var refreshed: [Int] = []
        var revalidated: [Int] = []
        for index in indices where rows[index] == nil {
            guard let row = stored[index] else { continue }
            let keySize = writes[index].key.ambientKeySize
            switch writes[index].content {
            case .linkExisting:
                rows[index] = BatchRow(id: row.id, size: row.size, keySize: keySize, isNew: false)
            case .notModified:
                rows[index] = BatchRow(id: row.id, size: row.size, keySize: keySize, isNew: false)
                refreshed.append(index)
            case .unchangedBody:
                rows[index] = BatchRow(id: row.id, size: row.size, keySize: keySize, isNew: false)
                revalidated.append(index)
            case .body, .noContent:
                rows[index] = BatchRow(id: row.id, size: Int64(writes[index].body?.storedSize ?? 0), keySize: keySize,
                                       isNew: false)
                replaced.append(index)
            }
        }
        if !refreshed.isEmpty {
            let ordered = refreshed.sorted { rows[$0]!.id < rows[$1]!.id }
            try query(table.notModifiedSQL, [
                .int8Array(ordered.map { rows[$0]!.id }), .int8Array(ordered.map { writes[$0].cache.expires }),
                .boolArray(ordered.map { writes[$0].cache.mustRevalidate }), .int8(now),
            ])
        }
        if !revalidated.isEmpty {
            let ordered = revalidated.sorted { rows[$0]!.id < rows[$1]!.id }
            try query(table.unchangedBodySQL, [
                .int8Array(ordered.map { rows[$0]!.id }), .int8Array(ordered.map { writes[$0].cache.modified }),
                .textArray(ordered.map { writes[$0].cache.etag }), .int8Array(ordered.map { writes[$0].cache.expires }),
                .boolArray(ordered.map { writes[$0].cache.mustRevalidate }), .int8(now),
            ])
        }
        guard !replaced.isEmpty else { return }
        let ordered = replaced.sorted { rows[$0]!.id < rows[$1]!.id }
        var parameters: [PostgresValue] = [
            .int8Array(ordered.map { rows[$0]!.id }), .int8Array(ordered.map { writes[$0].cache.modified }),
            .textArray(ordered.map { writes[$0].cache.etag }), .int8Array(ordered.map { writes[$0].cache.expires }),
            .boolArray(ordered.map { writes[$0].cache.mustRevalidate }), .byteaArray(ordered.map { writes[$0].body?.data }),
            .int8(now), .boolArray(ordered.map { writes[$0].body?.compressed ?? false }),
        ]
        if table == .resources { parameters.append(kinds(writes, ordered)) }
        try query(table.updateSQL, parameters)
        // A body over a stored row is new content; no content over no content is no change.
        try recordChanges(table, ids: ordered.compactMap { index in
            writes[index].body != nil || stored[index]!.hasBody ? rows[index]!.id : nil
        })
        // A body of another size changes `sum(octet_length(data))` of every pack linking it, or
        // the ambient size when none does.
        let changed = ordered.compactMap { index -> (id: Int64, delta: Int64)? in
            let delta = rows[index]!.size - stored[index]!.size
            return delta == 0 ? nil : (rows[index]!.id, delta)
        }
        guard !changed.isEmpty else { return }
        try query(table.adjustLinkedBytesSQL, [.int8Array(changed.map(\.id)), .int8Array(changed.map(\.delta))])
        let linked = Set(try query(table.linkedAmongSQL, [.int8Array(changed.map(\.id))]).map { try $0.int64(0) })
        for row in changed where !linked.contains(row.id) { tally.ambientDelta += row.delta }
    }

    /// Links the rows of `indices` to their writes' packs (MapLibre's `markUsed`), refusing a
    /// tile that would be one more distinct pack tile than the global limit allows.
    private func link(_ table: StoredTable, _ writes: [ResourceWrite], _ indices: [Int], rows: [BatchRow?],
                      tally: inout BatchTally) throws {
        let candidates = try indices.filter { index in
            guard rows[index] != nil, let packID = writes[index].packID else { return false }
            return try isLivePack(packID, tally: &tally)
        }
        guard !candidates.isEmpty else { return }
        let old = Set(candidates.compactMap { rows[$0]!.isNew ? nil : rows[$0]!.id })
        var links: [Int64: Set<Int64>] = [:]
        if !old.isEmpty {
            let ids = old.sorted()
            try query(table.lockSQL, [.int8Array(ids)])
            for row in try query(table.existingLinksSQL, [.int8Array(ids)]) {
                links[try row.int64(0), default: []].insert(try row.int64(1))
            }
        }
        var added: [(pack: Int64, id: Int64, index: Int, firstAnywhere: Bool)] = []
        for index in candidates {
            let row = rows[index]!
            let packID = writes[index].packID!
            let existing = links[row.id] ?? []
            if existing.contains(packID) { continue }
            if table == .tiles, existing.isEmpty, let limit = try tileLimit(&tally) {
                if limit.linked >= limit.limit {
                    tally.outcome.tileLimitExceeded.insert(packID)
                    continue
                }
                tally.tileLimit = .some((limit.limit, limit.linked + 1))
            }
            links[row.id, default: []].insert(packID)
            added.append((packID, row.id, index, existing.isEmpty))
        }
        guard !added.isEmpty else { return }
        var inserted: Set<[Int64]> = []
        for row in try query(table.insertLinksSQL, [.int8Array(added.map(\.pack)), .int8Array(added.map(\.id))]) {
            inserted.insert([try row.int64(0), try row.int64(1)])
        }
        var newToVersionedPacks: [Int64] = []
        for link in added where inserted.contains([link.pack, link.id]) {
            let row = rows[link.index]!
            if tally.packVersions[link.pack] ?? 0 > 0 { newToVersionedPacks.append(row.id) }
            tally.deltas[link.pack, default: StoredProgress()].addRow(size: row.size, isTile: table == .tiles)
            if link.firstAnywhere {
                tally.ambientDelta -= row.size + row.keySize
                if table == .tiles { tally.newlyLinkedTiles += 1 }
            }
            if table == .tiles, case .tile(let tile) = writes[link.index].key,
               let unit = units?.unit(pack: link.pack, tile: tile) {
                tally.unitTiles[unit, default: 0] += 1
            }
        }
        try recordChanges(table, ids: newToVersionedPacks)
    }

    /// Whether `packID` names an existing pack, its row held `FOR KEY SHARE` so a delete on
    /// another node waits for this batch; rows for a removed pack stay ambient.
    private func isLivePack(_ packID: Int64, tally: inout BatchTally) throws -> Bool {
        if let known = tally.livePacks[packID] { return known }
        let version = try scalar("SELECT version FROM packd_packs WHERE region_id = $1 FOR KEY SHARE", [.int8(packID)])
        tally.livePacks[packID] = version != nil
        tally.packVersions[packID] = version ?? 0
        return version != nil
    }

    /// The global tile limit and the distinct tiles linked, read once per batch under the
    /// limit's advisory lock (held to the commit): batches that may add distinct tiles take
    /// turns cluster-wide while a limit is set, so the limit is exact across nodes.
    func tileLimit(_ tally: inout BatchTally) throws -> (limit: Int64, linked: Int64)? {
        if let known = tally.tileLimit { return known }
        guard let limit = try tileLimit() else {
            tally.tileLimit = .some(nil)
            return nil
        }
        try lockTileLimit()
        let value = (limit, try linkedTileCount())
        tally.tileLimit = value
        return value
    }

    func lockTileLimit() throws {
        try query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                  [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.tileLimit.rawValue))])
    }

    // MARK: Columns

    private func sortedByKey(_ table: StoredTable, _ writes: [ResourceWrite], _ indices: [Int]) -> [Int] {
        indices.sorted { a, b in
            switch (writes[a].key, writes[b].key) {
            case (.tile(let x), .tile(let y)):
                return (x.urlTemplate, x.pixelRatio, x.z, x.y, x.x) < (y.urlTemplate, y.pixelRatio, y.z, y.y, y.x)
            case (.resource(let x, _), .resource(let y, _)):
                return x < y
            default:
                return a < b
            }
        }
    }

    /// `expires, modified, etag, data, compressed, must_revalidate` of each write.
    private func cacheColumns(_ writes: [ResourceWrite], _ indices: [Int]) -> [PostgresValue] {
        [.int8Array(indices.map { writes[$0].cache.expires }), .int8Array(indices.map { writes[$0].cache.modified }),
         .textArray(indices.map { writes[$0].cache.etag }), .byteaArray(indices.map { writes[$0].body?.data }),
         .boolArray(indices.map { writes[$0].body?.compressed ?? false }),
         .boolArray(indices.map { writes[$0].cache.mustRevalidate })]
    }

    private func kinds(_ writes: [ResourceWrite], _ indices: [Int]) -> PostgresValue {
        .int8Array(indices.map { index -> Int64? in
            guard case .resource(_, let kind) = writes[index].key else { return nil }
            return Int64(kind.rawValue)
        })
    }
}

extension ResourceWrite {
    /// The body to store: nil for "no content" (and for writes that store no body).
    var body: StoredBody? {
        if case .body(let body) = content { return body }
        return nil
    }
}

extension StoredProgress {
    mutating func addRow(size: Int64, isTile: Bool) {
        completedResources += 1
        completedBytes += size
        if isTile {
            completedTiles += 1
            completedTileBytes += size
        }
    }
}
