import Foundation
import Packs
import Postgres

/// Packs, their progress, failures, revalidations, events and idempotency keys: the SQL of
/// `SQLiteStore`'s pack bookkeeping against the cluster schema.
extension PostgresStoreConnection {
    // MARK: PackRepository (rows decoded by `PackRecord(row:)`, as SQLite's are)

    public func pack(_ id: Int64) throws -> PackRecord? {
        try query(PackRecord.selectSQL + " WHERE p.region_id = $1", [.int8(id)]).first.map { try PackRecord(row: $0) }
    }

    /// ASCII case is ignored as SQLite's `lower` does (PostgreSQL's follows the locale).
    static let asciiLower = "translate(%@, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"

    public func packs(after: Int64, state: PackState?, nameContains: String?, limit: Int) throws -> [PackRecord] {
        let lowerName = Self.asciiLower.replacingOccurrences(of: "%@", with: "p.name")
        let lowerNeedle = Self.asciiLower.replacingOccurrences(of: "%@", with: "$3::text")
        return try query(PackRecord.selectSQL + """
             WHERE p.region_id > $1 AND ($2::text IS NULL OR p.state = $2)
              AND ($3::text IS NULL OR strpos(\(lowerName), \(lowerNeedle)) > 0)
            ORDER BY p.region_id LIMIT $4
            """, [.int8(after), PostgresValue(state?.rawValue), PostgresValue(nameContains),
                  .int8(Int64(min(max(limit, 0), 500)))]).map { try PackRecord(row: $0) }
    }

    public func progress(_ id: Int64) throws -> StoredProgress? {
        try query("""
            SELECT completed_resources, completed_bytes, completed_tiles, completed_tile_bytes, failed_resources,
                   archive_requests, archive_bytes
            FROM packd_progress WHERE pack_id = $1
            """, [.int8(id)]).first.map { row in
            StoredProgress(completedResources: try row.int64(0), completedBytes: try row.int64(1),
                           completedTiles: try row.int64(2), completedTileBytes: try row.int64(3),
                           failedResources: try row.int64(4), archiveRequests: try row.int64(5),
                           archiveBytes: try row.int64(6))
        }
    }

    /// The completed counts recounted from the link tables (MapLibre's way); the maintained row
    /// must always equal it.
    public func recountProgress(_ id: Int64) throws -> StoredProgress {
        let row = try query("""
            SELECT (SELECT count(*) FROM region_resources WHERE region_id = $1)::int8,
                   (SELECT coalesce(sum(octet_length(r.data)), 0) FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
                    WHERE rr.region_id = $1)::int8,
                   (SELECT count(*) FROM region_tiles WHERE region_id = $1)::int8,
                   (SELECT coalesce(sum(octet_length(t.data)), 0) FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
                    WHERE rt.region_id = $1)::int8
            """, [.int8(id)]).first
        let (resources, resourceBytes) = (try row?.int64(0) ?? 0, try row?.int64(1) ?? 0)
        let (tiles, tileBytes) = (try row?.int64(2) ?? 0, try row?.int64(3) ?? 0)
        return StoredProgress(completedResources: resources + tiles, completedBytes: resourceBytes + tileBytes,
                              completedTiles: tiles, completedTileBytes: tileBytes)
    }

    public func failures(packID: Int64, limit: Int) throws -> [ResourceFailure] {
        try query("""
            SELECT id::int8, url, status::int8, message, attempts::int8, at FROM packd_errors WHERE pack_id = $1
            ORDER BY id DESC LIMIT $2
            """, [.int8(packID), .int8(Int64(min(max(limit, 0), 1000)))]).map { row in
            ResourceFailure(id: try row.int64(0), url: try row.string(1), status: try row.int64OrNil(2),
                            message: try row.string(3), attempts: try row.int64(4), at: try row.int64(5))
        }
    }

    public func idempotencyEntry(_ key: String) throws -> IdempotencyEntry? {
        try query("SELECT request_hash, pack_id, status::int8, body, created_at FROM packd_idempotency WHERE key = $1",
                  [.text(key)]).first.map { row in
            IdempotencyEntry(requestHash: try row.string(0), packID: try row.int64OrNil(1), status: try row.int64(2),
                             body: try row.bytesOrNil(3) ?? [], createdAt: try row.int64(4))
        }
    }

    public func packCount() throws -> Int64 {
        try scalar("SELECT count(*)::int8 FROM packd_packs") ?? 0
    }

    public func packCountsByState() throws -> [PackState: Int] {
        var counts: [PackState: Int] = [:]
        for row in try query("SELECT state, count(*)::int8 FROM packd_packs GROUP BY state") {
            if let state = PackState(rawValue: try row.string(0)) { counts[state] = Int(try row.int64(1)) }
        }
        return counts
    }

    public func scheduledPackIDs() throws -> [Int64] {
        try query("""
            SELECT region_id FROM packd_packs WHERE state = ANY($1)
            ORDER BY array_position($1, state), region_id
            """, [.textArray([PackState.active.rawValue, PackState.queued.rawValue])]).map { try $0.int64(0) }
    }

    public func events(after: Int64, packID: Int64?, limit: Int) throws -> [StoredEvent] {
        try query("""
            SELECT id, pack_id, type, data, created_at FROM packd_events
            WHERE id > $1 AND ($2::int8 IS NULL OR pack_id = $2) ORDER BY id LIMIT $3
            """, [.int8(after), PostgresValue(packID), .int8(Int64(min(max(limit, 0), 10_000)))]).map { row in
            StoredEvent(id: try row.int64(0), packID: try row.int64OrNil(1), type: try row.string(2), json: try row.string(3),
                        createdAt: try row.int64(4))
        }
    }

    public func oldestEventID() throws -> Int64? {
        try scalar("SELECT min(id) FROM packd_events")
    }

    /// The sequence's last value: ids handed out by a transaction that rolled back stay used.
    public func lastEventID() throws -> Int64 {
        try scalar("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM packd_event_ids") ?? 0
    }

    public func ambientCache() throws -> (size: Int64, maximumSize: Int64) {
        (max(0, try scalar("SELECT coalesce(sum(ambient_bytes), 0)::int8 FROM packd_totals") ?? 0),
         try maximumAmbientCacheSize())
    }

    // MARK: MutablePackRepository

    public func createPack(_ record: PackRecord, now: Int64) throws -> Int64 {
        try transaction {
            guard let id = try scalar("INSERT INTO regions (definition, description) VALUES ($1, $2) RETURNING id",
                                      [.text(record.definition), PostgresValue(record.context)]) else {
                throw StoreError(.other, "INSERT … RETURNING returned no id")
            }
            try query("""
                INSERT INTO packd_packs (region_id, name, state, error, context, created_at, updated_at, completed_at,
                  limits, expected_resources, expected_tiles, expected_is_precise, update_available, refresh_every,
                  next_refresh_at, start_area)
                VALUES ($1, $2, $3, $4, $5, $6, $6, NULL, $7, $8, $9, $10, $11, $12, $13, $14)
                """, [.int8(id), .text(record.name), .text(record.state.rawValue),
                      PostgresValue(record.error.flatMap(PackRecord.encodeJSON)), PostgresValue(record.context), .int8(now),
                      PostgresValue(PackRecord.encodeJSON(record.limits)), .int8(record.expectedResources),
                      .int8(record.expectedTiles), .bool(record.expectedIsPrecise), .bool(record.updateAvailable),
                      PostgresValue(record.refreshEvery), PostgresValue(record.nextRefreshAt),
                      PostgresValue(record.startArea.flatMap(PackRecord.encodeJSON))])
            try query("INSERT INTO packd_progress (pack_id) VALUES ($1)", [.int8(id)])
            return id
        }
    }

    /// The pack's state, locking its row for the transaction (`FOR UPDATE`): a transition on
    /// another node waits, then sees this one's result.
    func lockedState(_ packID: Int64) throws -> PackState? {
        guard let text = try connection.scalarString("SELECT state FROM packd_packs WHERE region_id = $1 FOR UPDATE",
                                                     [.int8(packID)]) else { return nil }
        guard let state = PackState(rawValue: text) else {
            throw StoreError(.corrupt, "pack \(packID) has an unknown state '\(text)'")
        }
        return state
    }

    public func transition(_ packID: Int64, _ event: PackLifecycle.Event, now: Int64) throws -> TransitionOutcome {
        try transaction {
            guard let state = try lockedState(packID) else { return .noSuchPack }
            switch PackLifecycle.transition(from: state, on: event) {
            case .failure(let refusal):
                return .refused(refusal)
            case .success(let transition):
                let recorded = try transition.record(packID, in: TransitionRowsSQL(connection: self), now: now)
                // Work units belong to one stretch of being active: a pack that continues later
                // is planned and cut anew (its units skip what is stored).
                if let next = transition.to, transition.changesState, next != .active { try forgetWorkUnits(packID) }
                return .applied(recorded)
            }
        }
    }

    func setPackState(_ packID: Int64, state: PackState, error: PackError?, now: Int64) throws {
        try query("""
            UPDATE packd_packs SET state = $2, error = $3, updated_at = $4,
              completed_at = CASE WHEN $5 THEN $4 ELSE completed_at END
            WHERE region_id = $1
            """, [.int8(packID), .text(state.rawValue), PostgresValue(error.flatMap(PackRecord.encodeJSON)), .int8(now),
                  .bool(state == .complete)])
    }

    func setExpected(_ packID: Int64, _ counts: ExpectedCounts, now: Int64) throws {
        try query("""
            UPDATE packd_packs SET expected_resources = $2, expected_tiles = $3, expected_is_precise = $4, updated_at = $5
            WHERE region_id = $1
            """, [.int8(packID), .int8(counts.resources), .int8(counts.tiles), .bool(counts.precise), .int8(now)])
    }

    @discardableResult
    public func updatePack(_ packID: Int64, name: String?, context: [UInt8]??, now: Int64) throws -> Bool {
        try transaction {
            guard try lockedState(packID) != nil else { return false }
            if let name {
                try query("UPDATE packd_packs SET name = $2, updated_at = $3 WHERE region_id = $1",
                          [.int8(packID), .text(name), .int8(now)])
            }
            if let context {
                try query("UPDATE packd_packs SET context = $2, updated_at = $3 WHERE region_id = $1",
                          [.int8(packID), PostgresValue(context), .int8(now)])
                try query("UPDATE regions SET description = $2 WHERE id = $1", [.int8(packID), PostgresValue(context)])
            }
            return true
        }
    }

    /// An update newly found available is announced to webhooks in the same transaction.
    public func setUpdateAvailable(_ packID: Int64, _ available: Bool, now: Int64) throws {
        try transaction {
            guard let before = try query("""
                SELECT CASE WHEN update_checked_at IS NULL THEN NULL ELSE update_available END FROM packd_packs
                WHERE region_id = $1 FOR UPDATE
                """, [.int8(packID)]).map({ try $0.boolOrNil(0) }).first else { return }
            try query("UPDATE packd_packs SET update_available = $2, update_checked_at = $3, updated_at = $3 WHERE region_id = $1",
                      [.int8(packID), .bool(available), .int8(now)])
            if WebhookTrigger.updateBecameAvailable(before: before, after: available) {
                try enqueueWebhookMessages([.packUpdateAvailable], packID: packID)
            }
        }
    }

    public func recordSkippedGlyphRanges(_ packID: Int64, _ skipped: SkippedGlyphRanges, now: Int64) throws {
        try query("UPDATE packd_packs SET skipped_glyph_ranges = $2, updated_at = $3 WHERE region_id = $1",
                  [.int8(packID), PostgresValue(PackRecord.encodeJSON(skipped)), .int8(now)])
    }

    public func recordStartAreaReady(_ packID: Int64, at time: Int64) throws -> Bool {
        !(try query("""
            UPDATE packd_packs SET start_area_ready_at = $2, updated_at = $2
            WHERE region_id = $1 AND start_area_ready_at IS NULL RETURNING region_id
            """, [.int8(packID), .int8(time)]).first == nil)
    }

    public func recordFailure(packID: Int64, url: String, status: Int64?, message: String, attempts: Int64, now: Int64) throws {
        try transaction {
            try query("""
                INSERT INTO packd_errors (pack_id, url, status, message, attempts, at) VALUES ($1, $2, $3, $4, $5, $6)
                """, [.int8(packID), .text(url), PostgresValue(status), .text(message), .int8(attempts), .int8(now)])
            try query("UPDATE packd_progress SET failed_resources = failed_resources + 1 WHERE pack_id = $1", [.int8(packID)])
            try query("""
                DELETE FROM packd_errors WHERE pack_id = $1 AND id <= (
                  SELECT id FROM packd_errors WHERE pack_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)
                """, [.int8(packID), .int8(Self.maximumErrorsPerPack)])
        }
    }

    public func addArchiveTraffic(packID: Int64, requests: Int64, bytes: Int64) throws {
        try query("""
            UPDATE packd_progress SET archive_requests = archive_requests + $2, archive_bytes = archive_bytes + $3
            WHERE pack_id = $1
            """, [.int8(packID), .int8(requests), .int8(bytes)])
    }

    public func clearFailures(packID: Int64) throws {
        try transaction {
            try query("DELETE FROM packd_errors WHERE pack_id = $1", [.int8(packID)])
            try query("UPDATE packd_progress SET failed_resources = 0 WHERE pack_id = $1", [.int8(packID)])
        }
    }

    public func restartInvalidation(_ packID: Int64, now: Int64) throws {
        try query("""
            INSERT INTO packd_invalidations (pack_id, unchanged, updated, removed, started_at, completed_at)
            VALUES ($1, 0, 0, 0, $2, NULL)
            ON CONFLICT (pack_id) DO UPDATE SET unchanged = 0, updated = 0, removed = 0, started_at = $2, completed_at = NULL
            """, [.int8(packID), .int8(now)])
    }

    public func recordInvalidation(_ packID: Int64, unchanged: Int64, updated: Int64, removed: Int64,
                                   completedAt: Int64?) throws -> (PackInvalidation, StoredProgress)? {
        try transaction {
            guard let startedAt = try scalar("""
                UPDATE packd_invalidations SET unchanged = $2, updated = $3, removed = $4, completed_at = $5 WHERE pack_id = $1
                RETURNING started_at
                """, [.int8(packID), .int8(unchanged), .int8(updated), .int8(removed), PostgresValue(completedAt)]) else {
                return nil
            }
            return (PackInvalidation(unchanged: unchanged, updated: updated, removed: removed, startedAt: startedAt,
                                     completedAt: completedAt), try progress(packID) ?? StoredProgress())
        }
    }

    /// A caller-chosen `id` is kept (and the sequence moved past it); nil takes the next id in
    /// commit order.
    @discardableResult
    public func appendEvent(id: Int64?, packID: Int64?, type: String, json: String, now: Int64) throws -> Int64 {
        try transaction {
            let stored: Int64
            if let id {
                try query("SELECT setval('packd_event_ids', greatest($1, (SELECT last_value FROM packd_event_ids)))",
                          [.int8(id)])
                try query("INSERT INTO packd_events (id, pack_id, type, data, created_at) VALUES ($1, $2, $3, $4, $5)",
                          [.int8(id), PostgresValue(packID), .text(type), .text(json), .int8(now)])
                try query("SELECT pg_notify($1, $2)", [.text(EventChannel.name), .text(String(id))])
                try enqueueWebhooks(forAppended: [StoredEvent(id: id, packID: packID, type: type, json: json, createdAt: now)])
                stored = id
            } else {
                stored = try appendEvents([StoredEvent(id: 0, packID: packID, type: type, json: json, createdAt: now)]).last ?? 0
            }
            try query("DELETE FROM packd_events WHERE id <= $1", [.int8(stored - Self.maximumEvents)])
            return stored
        }
    }

    /// Appends events with ids in commit order (see `packd_append_events`); their ids.
    ///
    /// A `progress` event carries the pack's counts and state as they are when it is appended,
    /// not as its node saw them: nodes commit progress at once and their events get ids in commit
    /// order later, so the counts a node saw could be older than those of an event appended before
    /// it. Under the event lock every earlier event's transaction has committed, so the counts read
    /// here never go backwards along the log — and a stream on any node shows the pack's state,
    /// whichever node published the event.
    func appendEvents(_ events: [StoredEvent]) throws -> [Int64] {
        guard !events.isEmpty else { return [] }
        try query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                  [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.events.rawValue))])
        let payloads = try currentProgressPayloads(events)
        let rows = try query("SELECT packd_append_events($1, $2, $3, $4)", [
            .int8Array(events.map(\.packID)), .textArray(events.map(\.type)), .textArray(payloads),
            .int8(events.map(\.createdAt).max() ?? 0),
        ])
        let ids = try rows.map { try $0.int64(0) }
        try enqueueWebhooks(forAppended: events)
        if let last = ids.last {
            try query("DELETE FROM packd_events WHERE id <= $1", [.int8(last - Self.maximumEvents)])
        }
        return ids
    }

    /// Each event's JSON, a `progress` event's counts and state replaced by the stored ones.
    private func currentProgressPayloads(_ events: [StoredEvent]) throws -> [String?] {
        let packs = Set(events.compactMap { $0.type == PackEvent.Kind.progress.rawValue ? $0.packID : nil })
        guard !packs.isEmpty else { return events.map(\.json) }
        var current: [Int64: (state: PackState, progress: StoredProgress)] = [:]
        for row in try query("""
            SELECT p.region_id, p.state, g.completed_resources, g.completed_bytes, g.completed_tiles, g.completed_tile_bytes,
                   g.failed_resources, g.archive_requests, g.archive_bytes
            FROM packd_packs p JOIN packd_progress g ON g.pack_id = p.region_id WHERE p.region_id = ANY($1)
            """, [.int8Array(packs.sorted())]) {
            guard let state = PackState(rawValue: try row.string(1)) else { continue }
            current[try row.int64(0)] = (state, StoredProgress(
                completedResources: try row.int64(2), completedBytes: try row.int64(3), completedTiles: try row.int64(4),
                completedTileBytes: try row.int64(5), failedResources: try row.int64(6), archiveRequests: try row.int64(7),
                archiveBytes: try row.int64(8)))
        }
        return events.map { event in
            guard event.type == PackEvent.Kind.progress.rawValue, let pack = event.packID, let stored = current[pack],
                  var decoded = try? JSONDecoder().decode(ProgressEvent.self, from: Data(event.json.utf8)) else { return event.json }
            decoded.state = stored.state
            decoded.progress.completedResources = stored.progress.completedResources
            decoded.progress.completedBytes = stored.progress.completedBytes
            decoded.progress.completedTiles = stored.progress.completedTiles
            decoded.progress.completedTileBytes = stored.progress.completedTileBytes
            decoded.progress.failedResources = stored.progress.failedResources
            decoded.progress.archiveRequests = stored.progress.archiveRequests
            decoded.progress.archiveBytes = stored.progress.archiveBytes
            return (try? SortedJSONEncoder.encode(decoded)).map { String(decoding: $0, as: UTF8.self) } ?? event.json
        }
    }

    public func storeIdempotencyKey(_ key: String, requestHash: String, packID: Int64?, status: Int64, body: [UInt8],
                                    now: Int64, retention: Int64) throws {
        try transaction {
            try query("DELETE FROM packd_idempotency WHERE created_at < $1", [.int8(now - retention)])
            try query("""
                INSERT INTO packd_idempotency (key, request_hash, pack_id, status, body, created_at) VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (key) DO NOTHING
                """, [.text(key), .text(requestHash), PostgresValue(packID), .int8(status), .bytea(body), .int8(now)])
        }
    }

    /// Every pack, every stored row, events and idempotency keys gone; settings (and nodes) stay.
    public func reset() throws {
        try transaction {
            // Every pack's removal is announced to webhooks (the outbox and endpoints stay).
            for packID in try query("SELECT region_id FROM packd_packs ORDER BY region_id").map({ try $0.int64(0) }) {
                try enqueueWebhookMessages([.packRemoved], packID: packID)
            }
            try connection.execute("""
                DELETE FROM region_tiles; DELETE FROM region_resources; DELETE FROM regions;
                DELETE FROM tiles; DELETE FROM resources; DELETE FROM packd_events; DELETE FROM packd_idempotency;
                UPDATE packd_totals SET linked_tiles = 0, ambient_bytes = 0;
                """)
        }
    }

    /// Removes a pack as MapLibre's `deleteRegion` does: the links go, rows no other pack links
    /// become ambient (trimmed to the limit). False when there was no such pack.
    @discardableResult
    func removePack(_ packID: Int64) throws -> Bool {
        try transaction {
            // Batches linking to the pack hold its row `FOR KEY SHARE`: wait for them, and make
            // later ones wait for this delete.
            guard try scalar("SELECT 1::int8 FROM packd_packs WHERE region_id = $1 FOR UPDATE", [.int8(packID)]) != nil else {
                return false
            }
            let tiles = try query("""
                SELECT count(*)::int8, coalesce(sum(coalesce(octet_length(t.data), 0) + octet_length(tt.url_template)), 0)::int8
                FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id JOIN tile_templates tt ON tt.id = t.template_id
                WHERE rt.region_id = $1
                  AND NOT EXISTS (SELECT 1 FROM region_tiles o WHERE o.tile_id = rt.tile_id AND o.region_id <> $1)
                """, [.int8(packID)]).first
            let resourceBytes = try scalar("""
                SELECT coalesce(sum(coalesce(octet_length(r.data), 0) + octet_length(r.url)), 0)::int8
                FROM region_resources rr JOIN resources r ON r.id = rr.resource_id WHERE rr.region_id = $1
                  AND NOT EXISTS (SELECT 1 FROM region_resources o WHERE o.resource_id = rr.resource_id AND o.region_id <> $1)
                """, [.int8(packID)]) ?? 0
            try query("DELETE FROM regions WHERE id = $1", [.int8(packID)])
            try addTotals(linkedTiles: -(try tiles?.int64(0) ?? 0), ambientBytes: (try tiles?.int64(1) ?? 0) + resourceBytes)
            try trimAmbientCache()
            return true
        }
    }
}

/// This connection's SQL for the rows a transition changes.
private struct TransitionRowsSQL: TransitionRows {
    let connection: PostgresStoreConnection

    func clearFailures(packID: Int64) throws { try connection.clearFailures(packID: packID) }
    func restartInvalidation(_ packID: Int64, now: Int64) throws { try connection.restartInvalidation(packID, now: now) }
    func storeExpected(_ packID: Int64, _ counts: ExpectedCounts, now: Int64) throws {
        try connection.setExpected(packID, counts, now: now)
    }
    func removeRows(_ packID: Int64) throws { _ = try connection.removePack(packID) }
    func setPackState(_ packID: Int64, state: PackState, error: PackError?, now: Int64) throws {
        try connection.setPackState(packID, state: state, error: error, now: now)
    }
    func recordVersion(_ packID: Int64, now: Int64) throws -> [PackVersion] {
        try connection.cutVersions(completing: packID, now: now)
    }
    func enqueueWebhooks(_ types: [WebhookEventType], packID: Int64) throws {
        try connection.enqueueWebhookMessages(types, packID: packID)
    }
}

/// A libpq row as `PackRecord(row:)` reads it: the driver's accessors are the protocol's.
extension PostgresRow: StoredRowColumns {}
