import CSQLite
import Packs

/// Pack bookkeeping on the writer's connection. Each operation is one transaction.
extension OfflineDatabase {
    /// Events kept in `packd_events`; older ones are deleted (ids keep increasing regardless).
    public static let maximumEvents: Int64 = 10_000
    /// Failed resources kept per pack.
    public static let maximumErrorsPerPack: Int64 = 1_000

    /// Creates the MapLibre region, its `packd_packs` row and a zero progress row; returns the id.
    public func createPack(_ pack: PackRecord, now: Int64) throws -> Int64 {
        try database.transaction {
            try database.execute("INSERT INTO regions (definition, description) VALUES (?1, ?2)",
                                 [.text(pack.definition), DatabaseValue(pack.context)])
            let id = database.lastInsertedRowID
            try database.execute("""
                INSERT INTO packd_packs (region_id, name, state, error, context, created_at, updated_at, completed_at,
                  limits, expected_resources, expected_tiles, expected_is_precise, update_available, refresh_every, next_refresh_at,
                  start_area)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, NULL, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                """, [.integer(id), .text(pack.name), .text(pack.state.rawValue), DatabaseValue(pack.error.flatMap(PackRecord.encodeJSON)),
                      DatabaseValue(pack.context), .integer(now), DatabaseValue(PackRecord.encodeJSON(pack.limits)),
                      .integer(pack.expectedResources), .integer(pack.expectedTiles),
                      DatabaseValue(pack.expectedIsPrecise), DatabaseValue(pack.updateAvailable),
                      DatabaseValue(pack.refreshEvery), DatabaseValue(pack.nextRefreshAt),
                      DatabaseValue(pack.startArea.flatMap(PackRecord.encodeJSON))])
            try database.execute("INSERT INTO packd_progress (pack_id) VALUES (?1)", [.integer(id)])
            return id
        }
    }

    /// The pack's state, nil when there is no such pack.
    public func packState(_ packID: Int64) throws -> PackState? {
        guard let text = try database.scalarString("SELECT state FROM packd_packs WHERE region_id = ?1", [.integer(packID)])
        else { return nil }
        guard let state = PackState(rawValue: text) else {
            throw DatabaseError(code: SQLITE_CORRUPT, message: "pack \(packID) has an unknown state '\(text)'")
        }
        return state
    }

    /// Whether a resource with this URL is linked to any pack (so storing it does not need the
    /// ambient cache).
    public func isResourceLinkedToAnyPack(url: String) throws -> Bool {
        try database.scalarInt("""
            SELECT count(*) FROM region_resources JOIN resources ON resources.id = resource_id WHERE url = ?1
            """, [.text(url)]) != 0
    }

    /// Sets state (and the error, cleared when nil); `completed_at` is set when it becomes complete.
    public func setPackState(_ packID: Int64, state: PackState, error: PackError?, now: Int64) throws {
        try database.execute("""
            UPDATE packd_packs SET state = ?2, error = ?3, updated_at = ?4,
              completed_at = CASE WHEN ?5 THEN ?4 ELSE completed_at END
            WHERE region_id = ?1
            """, [.integer(packID), .text(state.rawValue), DatabaseValue(error.flatMap(PackRecord.encodeJSON)), .integer(now),
                  DatabaseValue(state == .complete)])
    }

    /// Records the exact expected counts once the style and TileJSONs are known.
    public func setExpected(_ packID: Int64, resources: Int64, tiles: Int64, precise: Bool, now: Int64) throws {
        try database.execute("""
            UPDATE packd_packs SET expected_resources = ?2, expected_tiles = ?3, expected_is_precise = ?4, updated_at = ?5
            WHERE region_id = ?1
            """, [.integer(packID), .integer(resources), .integer(tiles), DatabaseValue(precise), .integer(now)])
    }

    /// Replaces name and/or context; the context is mirrored into the region's `description`.
    /// False when there is no such pack.
    @discardableResult
    public func updatePack(_ packID: Int64, name: String?, context: [UInt8]??, now: Int64) throws -> Bool {
        try database.transaction {
            guard try packState(packID) != nil else { return false }
            if let name {
                try database.execute("UPDATE packd_packs SET name = ?2, updated_at = ?3 WHERE region_id = ?1",
                                     [.integer(packID), .text(name), .integer(now)])
            }
            if let context {
                try database.execute("UPDATE packd_packs SET context = ?2, updated_at = ?3 WHERE region_id = ?1",
                                     [.integer(packID), DatabaseValue(context), .integer(now)])
                try database.execute("UPDATE regions SET description = ?2 WHERE id = ?1",
                                     [.integer(packID), DatabaseValue(context)])
            }
            return true
        }
    }

    /// The result of a `check-update`; `update_checked_at` tells it apart from "never checked".
    /// An update newly found available is announced to webhooks in the same transaction.
    public func setUpdateAvailable(_ packID: Int64, _ available: Bool, now: Int64) throws {
        try database.transaction {
            let before = try database.scalarInt("SELECT CASE WHEN update_checked_at IS NULL THEN NULL ELSE update_available END FROM packd_packs WHERE region_id = ?1",
                                                [.integer(packID)])
            try database.execute("UPDATE packd_packs SET update_available = ?2, update_checked_at = ?3, updated_at = ?3 WHERE region_id = ?1",
                                 [.integer(packID), DatabaseValue(available), .integer(now)])
            if WebhookTrigger.updateBecameAvailable(before: before.map { $0 != 0 }, after: available), database.changes > 0 {
                try enqueueWebhookMessages([.packUpdateAvailable], packID: packID)
            }
        }
    }

    public func recordSkippedGlyphRanges(_ packID: Int64, _ skipped: SkippedGlyphRanges, now: Int64) throws {
        try database.execute("UPDATE packd_packs SET skipped_glyph_ranges = ?2, updated_at = ?3 WHERE region_id = ?1",
                             [.integer(packID), DatabaseValue(PackRecord.encodeJSON(skipped)), .integer(now)])
    }

    public func recordStartAreaReady(_ packID: Int64, at time: Int64) throws -> Bool {
        try database.execute("""
            UPDATE packd_packs SET start_area_ready_at = ?2, updated_at = ?2 WHERE region_id = ?1 AND start_area_ready_at IS NULL
            """, [.integer(packID), .integer(time)])
        return database.changes > 0
    }

    /// Appends an event and returns its id (ids never repeat, across restarts too): `id` when the
    /// caller numbered it (the broadcaster does, as it emits), else the next free one.
    @discardableResult
    public func appendEvent(id: Int64? = nil, packID: Int64?, type: String, json: String, now: Int64) throws -> Int64 {
        try database.transaction {
            try database.execute("INSERT INTO packd_events (id, pack_id, type, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                                 [DatabaseValue(id), DatabaseValue(packID), .text(type), .text(json), .integer(now)])
            let id = database.lastInsertedRowID
            try database.execute("DELETE FROM packd_events WHERE id <= ?1", [.integer(id - Self.maximumEvents)])
            // An event webhooks carry by its type gets its outbox rows in the append's transaction.
            if let webhook = WebhookEventType.mapped(fromStoredEvent: type) {
                try enqueueWebhookMessage(webhook, packID: packID, now: WebhookStoreRules.nowMilliseconds()) { json }
            }
            return id
        }
    }

    /// Records a resource that failed for good, counts it in `failed_resources`, and keeps only
    /// the latest `maximumErrorsPerPack` rows.
    public func recordFailure(packID: Int64, url: String, status: Int64?, message: String, attempts: Int64, now: Int64) throws {
        try database.transaction {
            try database.execute("""
                INSERT INTO packd_errors (pack_id, url, status, message, attempts, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                """, [.integer(packID), .text(url), DatabaseValue(status), .text(message), .integer(attempts), .integer(now)])
            try database.execute("UPDATE packd_progress SET failed_resources = failed_resources + 1 WHERE pack_id = ?1",
                                 [.integer(packID)])
            try database.execute("""
                DELETE FROM packd_errors WHERE pack_id = ?1 AND id <= (
                  SELECT id FROM packd_errors WHERE pack_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)
                """, [.integer(packID), .integer(Self.maximumErrorsPerPack)])
        }
    }

    public func addArchiveTraffic(packID: Int64, requests: Int64, bytes: Int64) throws {
        try database.execute("""
            UPDATE packd_progress SET archive_requests = archive_requests + ?2, archive_bytes = archive_bytes + ?3
            WHERE pack_id = ?1
            """, [.integer(packID), .integer(requests), .integer(bytes)])
    }

    /// Forgets the failures of a pack (a resume retries them).
    public func clearFailures(packID: Int64) throws {
        try database.transaction {
            try database.execute("DELETE FROM packd_errors WHERE pack_id = ?1", [.integer(packID)])
            try database.execute("UPDATE packd_progress SET failed_resources = 0 WHERE pack_id = ?1", [.integer(packID)])
        }
    }

    /// Removes a pack as MapLibre's `deleteRegion` does: the links go, rows no other pack links
    /// become ambient and are trimmed to the ambient limit, then freed pages are vacuumed.
    /// Returns false when there was no such pack.
    /// `before` runs first in the removal's transaction (the webhook outbox rows of a deletion).
    @discardableResult
    public func removePack(_ packID: Int64, before: () throws -> Void = {}) throws -> Bool {
        let ambientBefore = ambientCacheSize
        let removed: Bool
        do {
            removed = try database.transaction { () throws -> Bool in
                try before()
                let tilesOnlyHere = try database.cachedStatement("""
                    SELECT count(*), IFNULL(SUM(IFNULL(LENGTH(t.data), 0) + LENGTH(CAST(t.url_template AS BLOB))), 0)
                    FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id WHERE rt.region_id = ?1
                    AND NOT EXISTS (SELECT 1 FROM region_tiles o WHERE o.tile_id = rt.tile_id AND o.region_id != ?1)
                    """)
                try tilesOnlyHere.bind([.integer(packID)])
                try tilesOnlyHere.step()
                let (tileCount, tileBytes) = (tilesOnlyHere.int64(at: 0), tilesOnlyHere.int64(at: 1))
                tilesOnlyHere.reset()
                let resourceBytes = try database.scalarInt("""
                    SELECT IFNULL(SUM(IFNULL(LENGTH(r.data), 0) + LENGTH(CAST(r.url AS BLOB))), 0)
                    FROM region_resources rr JOIN resources r ON r.id = rr.resource_id WHERE rr.region_id = ?1
                    AND NOT EXISTS (SELECT 1 FROM region_resources o WHERE o.resource_id = rr.resource_id AND o.region_id != ?1)
                    """, [.integer(packID)]) ?? 0
                try database.execute("DELETE FROM regions WHERE id = ?1", [.integer(packID)])
                guard database.changes > 0 else { return false }
                try database.execute("UPDATE packd_totals SET linked_tiles = linked_tiles - ?1 WHERE id = 1", [.integer(tileCount)])
                ambientCacheSize += tileBytes + resourceBytes
                try trimAmbientCache()
                return true
            }
        } catch {
            ambientCacheSize = ambientBefore
            throw error
        }
        if removed { try database.execute("PRAGMA incremental_vacuum") }
        return removed
    }

    /// Every pack, every cached row, events and idempotency keys gone; schema and settings stay.
    public func reset() throws {
        try database.transaction {
            // Every pack's removal is announced to webhooks (the outbox and endpoints stay).
            var after: Int64 = 0
            while let page = Optional(try packs(after: after, limit: 500)), let last = page.last {
                for pack in page { try enqueueWebhookMessages([.packRemoved], packID: pack.id) }
                after = last.id
            }
            try database.execute("""
                DELETE FROM region_tiles; DELETE FROM region_resources; DELETE FROM regions;
                DELETE FROM tiles; DELETE FROM resources; DELETE FROM packd_events; DELETE FROM packd_idempotency;
                UPDATE packd_totals SET linked_tiles = 0 WHERE id = 1;
                """)
        }
        ambientCacheSize = 0
        try database.execute("PRAGMA incremental_vacuum")
    }

    /// Stores the response of an idempotent request; entries older than `retention` go.
    public func storeIdempotencyKey(_ key: String, requestHash: String, packID: Int64?, status: Int64, body: [UInt8],
                                    now: Int64, retention: Int64) throws {
        try database.transaction {
            try database.execute("DELETE FROM packd_idempotency WHERE created_at < ?1", [.integer(now - retention)])
            try database.execute("""
                INSERT INTO packd_idempotency (key, request_hash, pack_id, status, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                ON CONFLICT (key) DO NOTHING
                """, [.text(key), .text(requestHash), DatabaseValue(packID), .integer(status), .blob(body), .integer(now)])
        }
    }

    /// Sets the global tile limit (nil: none), persisted.
    public func setTileLimit(_ limit: Int64?) throws {
        if let limit {
            try database.execute("INSERT INTO packd_meta (key, value) VALUES ('tile_limit', ?1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                                 [.integer(limit)])
        } else {
            try database.execute("DELETE FROM packd_meta WHERE key = 'tile_limit'")
        }
        linkedTileLimit = limit
    }
}
