import Foundation
import Packs
import Postgres

/// The store's queries on one PostgreSQL connection: what `SQLiteStore`'s `StoreReader` and
/// `OfflineDatabase` answer, against the cluster schema (`PostgresSchema`). One class for both
/// roles — the writer's connection (batches, links, pack changes) and the readers' — so a read
/// means the same on either; the writer's reads see its open transaction.
///
/// Owned by one thread at a time (the writer thread, or a reader checked out of the pool).
/// Every method that changes something is one transaction, or a savepoint inside the caller's.
public final class PostgresStoreConnection: StoreReading, StoreWriting, PackExporting {
    public let connection: PostgresConnection
    /// The node whose counter slot (`packd_totals.slot`) this connection adds to.
    let node: Int64
    /// Reads of stored rows, reported for the batched `accessed` update (readers only).
    let onAccess: (@Sendable (ResourceKey, Int64) -> Void)?
    /// The units this node holds, to count a unit's stored tiles with the tiles (writer only).
    let units: WorkUnitAttribution?
    /// Tile URL templates by id, as `tile_templates` numbers them (never renumbered).
    var templateIDs: [String: Int64] = [:]
    /// Events appended by the open batch, written last in its transaction (`packd_append_events`
    /// holds the event lock from the append to the commit: the shorter the better).
    var batchEvents: [StoredEvent]?
    /// Versions kept per pack (`--keep-versions`) when this connection cuts one.
    public var keepVersions = 3
    /// What "now" is for writes that are not told (an import's times), as `OfflineDatabase.clock`.
    public var clock: WallClock = .system

    /// Events kept in `packd_events`; older ones are deleted (ids keep increasing regardless).
    public static let maximumEvents: Int64 = 10_000
    /// Failed resources kept per pack.
    public static let maximumErrorsPerPack: Int64 = 1_000
    public static let defaultMaximumAmbientCacheSize: Int64 = 50 << 20

    /// Connects to `url` and puts packd's schema on the search path. Blocking.
    public init(url: PostgresURL, node: Int64, applicationName: String,
                onAccess: (@Sendable (ResourceKey, Int64) -> Void)? = nil, units: WorkUnitAttribution? = nil) throws {
        connection = try PostgresConnection(url: url, applicationName: applicationName)
        try PostgresSchemaMigrator.use(connection)
        self.node = node
        self.onAccess = onAccess
        self.units = units
    }

    var slot: Int64 { ClusterNodes.totalsSlot(node: node) }

    @discardableResult
    func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresRows {
        try connection.query(sql, parameters)
    }

    func scalar(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> Int64? {
        try connection.scalarInt(sql, parameters)
    }

    /// Runs `body` in a transaction (a savepoint inside one).
    func transaction<R>(_ body: () throws -> R) throws -> R {
        try connection.transaction(.readCommitted, body)
    }

    // MARK: Settings

    /// A `packd_meta` value as an integer, nil when unset.
    func meta(_ key: String) throws -> Int64? {
        try connection.scalarString("SELECT value FROM packd_meta WHERE key = $1", [.text(key)]).flatMap { Int64($0) }
    }

    func setMeta(_ key: String, _ value: Int64?) throws {
        if let value {
            try query("""
                INSERT INTO packd_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """, [.text(key), .text(String(value))])
        } else {
            try query("DELETE FROM packd_meta WHERE key = $1", [.text(key)])
        }
    }

    public func tileLimit() throws -> Int64? { try meta("tile_limit") }

    public func setTileLimit(_ limit: Int64?) throws {
        try setMeta("tile_limit", limit)
    }

    func maximumAmbientCacheSize() throws -> Int64 {
        try meta("ambient_cache_maximum") ?? Self.defaultMaximumAmbientCacheSize
    }

    // MARK: Counters

    /// Distinct tiles linked to any pack: the sum of every node's slot.
    public func linkedTileCount() throws -> Int64 {
        try scalar("SELECT coalesce(sum(linked_tiles), 0)::int8 FROM packd_totals") ?? 0
    }

    /// Adds to this node's slot of the cluster-wide counters.
    func addTotals(linkedTiles: Int64, ambientBytes: Int64) throws {
        guard linkedTiles != 0 || ambientBytes != 0 else { return }
        try query("""
            UPDATE packd_totals SET linked_tiles = linked_tiles + $2, ambient_bytes = ambient_bytes + $3 WHERE slot = $1
            """, [.int8(slot), .int8(linkedTiles), .int8(ambientBytes)])
    }

    public func storedBytes() throws -> Int64 {
        try scalar("""
            SELECT ((SELECT coalesce(sum(octet_length(data)), 0) FROM tiles)
                  + (SELECT coalesce(sum(octet_length(data)), 0) FROM resources))::int8
            """) ?? 0
    }

    // MARK: Tile templates

    /// The id of a stored URL template, nil when no tile of it was ever stored.
    func templateID(_ template: String) throws -> Int64? {
        if let id = templateIDs[template] { return id }
        guard let id = try scalar("SELECT id::int8 FROM tile_templates WHERE url_template = $1", [.text(template)]) else {
            return nil
        }
        templateIDs[template] = id
        return id
    }

    /// The ids of `templates`, adding the new ones (`ON CONFLICT`: another node may add the same
    /// one at once). Cached: a caller whose transaction rolled back calls
    /// `forgetUncommittedTemplates`, since the rows it added are gone with it.
    func ensureTemplateIDs(_ templates: some Sequence<String>) throws -> [String: Int64] {
        var ids: [String: Int64] = [:]
        var missing: [String] = []
        for template in Set(templates) {
            if let id = templateIDs[template] { ids[template] = id } else { missing.append(template) }
        }
        guard !missing.isEmpty else { return ids }
        try query("INSERT INTO tile_templates (url_template) SELECT unnest($1::text[]) ON CONFLICT (url_template) DO NOTHING",
                  [.textArray(missing)])
        for row in try query("SELECT id::int8, url_template FROM tile_templates WHERE url_template = ANY($1)",
                             [.textArray(missing)]) {
            ids[try row.string(1)] = try row.int64(0)
            templateIDs[try row.string(1)] = try row.int64(0)
        }
        return ids
    }

    /// Forgets cached template ids (after a rollback that may have removed inserted ones).
    func forgetUncommittedTemplates() {
        templateIDs.removeAll()
    }
}

/// The units of packs this node holds, by the tiles each covers: a batch that links a tile adds it
/// to its unit's `stored_tiles` in the same transaction as the pack's progress. Thread-safe.
public final class WorkUnitAttribution: @unchecked Sendable {
    /// One held unit: its key and which tiles it covers.
    public struct Entry: Sendable {
        public let key: WorkUnitLeases.Key
        public let urlTemplate: String
        public let pixelRatio: Int64
        public let zooms: ClosedRange<Int64>
        /// nil: every row (and column) of the zooms.
        public let rows: ClosedRange<Int64>?
        public let columns: ClosedRange<Int64>?

        public init(key: WorkUnitLeases.Key, urlTemplate: String, pixelRatio: Int64, zooms: ClosedRange<Int64>,
                    rows: ClosedRange<Int64>?, columns: ClosedRange<Int64>?) {
            self.key = key
            self.urlTemplate = urlTemplate
            self.pixelRatio = pixelRatio
            self.zooms = zooms
            self.rows = rows
            self.columns = columns
        }

        func contains(_ tile: TileKey) -> Bool {
            tile.urlTemplate == urlTemplate && tile.pixelRatio == pixelRatio && zooms.contains(tile.z)
                && rows.map { $0.contains(tile.y) } ?? true && columns.map { $0.contains(tile.x) } ?? true
        }
    }

    private let lock = NSLock()
    private var entries: [Int64: [Entry]] = [:]

    public init() {}

    public func hold(_ entry: Entry) {
        lock.withLock { entries[entry.key.pack, default: []].append(entry) }
    }

    public func release(_ key: WorkUnitLeases.Key) {
        lock.withLock {
            entries[key.pack]?.removeAll { $0.key == key }
            if entries[key.pack]?.isEmpty == true { entries[key.pack] = nil }
        }
    }

    /// The held unit of `pack` covering `tile`, if any.
    func unit(pack: Int64, tile: TileKey) -> WorkUnitLeases.Key? {
        lock.withLock { entries[pack]?.first { $0.contains(tile) }?.key }
    }
}
