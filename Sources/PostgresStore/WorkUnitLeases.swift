import Packs
import Postgres
import WorkSharing

/// The SQL of work sharing, for one node: storing a pack's cut, claiming units with
/// `FOR UPDATE SKIP LOCKED` (two nodes never get the same unit, and neither waits for the
/// other), renewing leases with the heartbeat, finishing and giving units back. Expiry is judged
/// by the database's `now()`: a unit whose lease ran out (its node died or hung) is claimable
/// again, and the next claimer skips what is already stored.
///
/// Every call runs on the caller's connection (a `PostgresConnectionThread`'s), inside the
/// caller's transaction when there is one.
public struct WorkUnitLeases: Sendable {
    public let node: Int64
    public let timing: LeaseTiming

    public init(node: Int64, timing: LeaseTiming = .standard) {
        self.node = node
        self.timing = timing
    }

    /// One unit held by this node.
    public struct Claimed: Hashable, Sendable {
        public let pack: Int64
        public let unit: WorkUnit
        /// How many times the unit has been claimed, this claim included (> 1: taken over).
        public let claims: Int
        /// Tiles stored for the unit so far (by whichever node).
        public let storedTiles: Int64
    }

    public struct Key: Hashable, Sendable {
        public let pack: Int64
        public let ordinal: Int

        public init(pack: Int64, ordinal: Int) {
            self.pack = pack
            self.ordinal = ordinal
        }
    }

    // MARK: Cutting

    /// Stores `cut` as `pack`'s units, unless the pack has units already (another node cut it
    /// first: the cut is deterministic, so theirs is the same). Streams the units in batches;
    /// one transaction. Returns the number of units stored (0 when already cut).
    @discardableResult
    public static func store(_ cut: WorkUnitCut, pack: Int64, on connection: PostgresConnection,
                             batchSize: Int = 2_000) throws -> Int {
        try connection.transaction {
            // Locks the pack's row: two nodes cutting at once store one cut.
            let already = try connection.query(
                "SELECT work_unit_tiles FROM packd_packs WHERE region_id = $1 FOR UPDATE", [.int8(pack)])
            guard let row = already.first else { throw UnknownPack(pack: pack) }
            if try row.int64OrNil(0) != nil { return 0 }
            var stored = 0
            var batch = UnitColumns()
            func flush() throws {
                guard !batch.isEmpty else { return }
                try connection.query("""
                    INSERT INTO packd_work_units (pack_id, ordinal, kind, pyramid, zoom_min, zoom_max, row_min, row_max,
                                                  column_min, column_max, tiles)
                    SELECT $1, * FROM unnest($2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::int8[],
                                             $8::int8[], $9::int8[], $10::int8[], $11::int8[])
                    """, [.int8(pack)] + batch.parameters)
                stored += batch.count
                batch = UnitColumns()
            }
            for unit in cut {
                batch.append(unit)
                if batch.count >= batchSize { try flush() }
            }
            try flush()
            try connection.query("UPDATE packd_packs SET work_unit_tiles = $2 WHERE region_id = $1",
                                 [.int8(pack), .int8(Int64(min(cut.unitTiles, Int(Int32.max))))])
            return stored
        }
    }

    public struct UnknownPack: Error, Equatable {
        public let pack: Int64
    }

    // MARK: Claiming and leases

    /// Claims up to `limit` units of `packs` that are pending or whose lease expired, lowest
    /// pack and ordinal first, for `timing.lease` seconds. Rows another claimer has locked are
    /// skipped, not waited for.
    public func claim(packs: [Int64], limit: Int, on connection: PostgresConnection) throws -> [Claimed] {
        guard !packs.isEmpty, limit > 0 else { return [] }
        let rows = try connection.query("""
            WITH candidates AS (
              SELECT pack_id, ordinal FROM packd_work_units
              WHERE pack_id = ANY($1) AND state <> '\(WorkUnitState.done.rawValue)'
                AND (state = '\(WorkUnitState.pending.rawValue)' OR lease_expires_at < now())
              ORDER BY pack_id, ordinal
              LIMIT $2
              FOR UPDATE SKIP LOCKED
            )
            UPDATE packd_work_units AS u
            SET state = '\(WorkUnitState.leased.rawValue)', lease_owner = $3,
                lease_expires_at = now() + make_interval(secs => $4), claims = u.claims + 1
            FROM candidates c
            WHERE u.pack_id = c.pack_id AND u.ordinal = c.ordinal
            RETURNING \(Self.unitColumns), u.claims, u.stored_tiles
            """, [.int8Array(packs), .int8(Int64(limit)), .int8(node), .float8(timing.lease)])
        return try rows.map { row in
            Claimed(pack: try row.int64(0), unit: try Self.unit(row), claims: Int(try row.int64(11)),
                    storedTiles: try row.int64(12))
        }.sorted { ($0.pack, $0.unit.ordinal) < ($1.pack, $1.unit.ordinal) }
    }

    /// Extends the leases of the units this node works on (`held`) and gives back any other
    /// unit the database still has it holding (work it dropped, e.g. after being fenced).
    /// Returns the units of `held` that are still this node's: a missing one was taken over by
    /// another node after its lease expired, and this node must stop working on it.
    public func renew(_ held: Set<Key>, on connection: PostgresConnection) throws -> Set<Key> {
        let keys = Array(held)
        return try connection.transaction {
            try connection.query("""
                UPDATE packd_work_units
                SET state = '\(WorkUnitState.pending.rawValue)', lease_owner = NULL, lease_expires_at = NULL
                WHERE lease_owner = $1 AND state = '\(WorkUnitState.leased.rawValue)'
                  AND (pack_id, ordinal) NOT IN (SELECT * FROM unnest($2::int8[], $3::int8[]))
                """, [.int8(node), .int8Array(keys.map(\.pack)), .int8Array(keys.map { Int64($0.ordinal) })])
            guard !keys.isEmpty else { return [] }
            let renewed = try connection.query("""
                UPDATE packd_work_units SET lease_expires_at = now() + make_interval(secs => $4)
                WHERE lease_owner = $1 AND state = '\(WorkUnitState.leased.rawValue)'
                  AND (pack_id, ordinal) IN (SELECT * FROM unnest($2::int8[], $3::int8[]))
                RETURNING pack_id, ordinal
                """, [.int8(node), .int8Array(keys.map(\.pack)), .int8Array(keys.map { Int64($0.ordinal) }),
                      .float8(timing.lease)])
            return Set(try renewed.map { Key(pack: try $0.int64(0), ordinal: Int(try $0.int64(1))) })
        }
    }

    /// Adds tiles stored for a unit (in the transaction that stored them, so the unit's count
    /// and the pack's progress move together).
    public static func addStoredTiles(_ count: Int64, to key: Key, on connection: PostgresConnection) throws {
        guard count != 0 else { return }
        try connection.query(
            "UPDATE packd_work_units SET stored_tiles = stored_tiles + $3 WHERE pack_id = $1 AND ordinal = $2",
            [.int8(key.pack), .int8(Int64(key.ordinal)), .int8(count)])
    }

    /// Marks a unit done if this node still holds it; false when another node took it over
    /// (what this node stored stays: the other skips it).
    public func complete(_ key: Key, on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            UPDATE packd_work_units
            SET state = '\(WorkUnitState.done.rawValue)', lease_owner = NULL, lease_expires_at = NULL
            WHERE pack_id = $1 AND ordinal = $2 AND lease_owner = $3 AND state = '\(WorkUnitState.leased.rawValue)'
            """, [.int8(key.pack), .int8(Int64(key.ordinal)), .int8(node)]).affectedRows == 1
    }

    /// Gives back this node's units (of `packs`, or all): pending again, claimable at once.
    /// For a clean shutdown, or a pack suspended or deleted.
    @discardableResult
    public func release(packs: [Int64]? = nil, on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            UPDATE packd_work_units
            SET state = '\(WorkUnitState.pending.rawValue)', lease_owner = NULL, lease_expires_at = NULL
            WHERE lease_owner = $1 AND state = '\(WorkUnitState.leased.rawValue)'
              AND ($2::int8[] IS NULL OR pack_id = ANY($2))
            """, [.int8(node), packs.map { .int8Array($0) } ?? .null]).affectedRows
    }

    /// Units of `pack` by state, expired leases counted as pending (for `GET /v1/cluster`).
    public static func counts(pack: Int64, on connection: PostgresConnection) throws -> [WorkUnitState: Int] {
        let rows = try connection.query("""
            SELECT CASE WHEN state = '\(WorkUnitState.leased.rawValue)' AND lease_expires_at < now()
                        THEN '\(WorkUnitState.pending.rawValue)' ELSE state END AS effective, count(*)
            FROM packd_work_units WHERE pack_id = $1 GROUP BY effective
            """, [.int8(pack)])
        var counts: [WorkUnitState: Int] = [:]
        for row in rows {
            guard let state = WorkUnitState(rawValue: try row.string(0)) else { continue }
            counts[state] = Int(try row.int64(1))
        }
        return counts
    }

    /// The units of every active pack by state, expired leases counted as pending.
    public static func counts(on connection: PostgresConnection) throws -> ClusterStatus.Units {
        var units = ClusterStatus.Units()
        for row in try connection.query("""
            SELECT CASE WHEN u.state = '\(WorkUnitState.leased.rawValue)' AND u.lease_expires_at < now()
                        THEN '\(WorkUnitState.pending.rawValue)' ELSE u.state END AS effective, count(*)::int8
            FROM packd_work_units u JOIN packd_packs p ON p.region_id = u.pack_id
            WHERE p.state = $1 GROUP BY effective
            """, [.text(PackState.active.rawValue)]) {
            let count = Int(try row.int64(1))
            switch WorkUnitState(rawValue: try row.string(0)) {
            case .pending: units.pending = count
            case .leased: units.leased = count
            case .done: units.done = count
            case nil: break
            }
        }
        return units
    }

    // MARK: Columns

    static let unitColumns = "u.pack_id, u.ordinal, u.kind, u.pyramid, u.zoom_min, u.zoom_max, u.row_min, u.row_max, "
        + "u.column_min, u.column_max, u.tiles"

    /// Reads a unit from columns 1…10 of `unitColumns`.
    static func unit(_ row: PostgresRow) throws -> WorkUnit {
        let ordinal = Int(try row.int64(1))
        let tiles = Int(try row.int64(10))
        switch try row.int64(2) {
        case 0:
            return WorkUnit(ordinal: ordinal, scope: .resources, tiles: tiles)
        case 1:
            return WorkUnit(ordinal: ordinal, scope: .zooms(pyramid: Int(try row.int64(3)),
                                                            Int(try row.int64(4))...Int(try row.int64(5))), tiles: tiles)
        default:
            return WorkUnit(ordinal: ordinal, scope: .window(
                pyramid: Int(try row.int64(3)), zoom: Int(try row.int64(4)),
                rows: Int(try row.int64(6))...Int(try row.int64(7)),
                columns: Int(try row.int64(8))...Int(try row.int64(9))), tiles: tiles)
        }
    }

    /// Units as column arrays for one `unnest` insert.
    private struct UnitColumns {
        var ordinals: [Int64?] = [], kinds: [Int64?] = [], pyramids: [Int64?] = []
        var zoomMins: [Int64?] = [], zoomMaxes: [Int64?] = []
        var rowMins: [Int64?] = [], rowMaxes: [Int64?] = [], columnMins: [Int64?] = [], columnMaxes: [Int64?] = []
        var tiles: [Int64?] = []

        var count: Int { ordinals.count }
        var isEmpty: Bool { ordinals.isEmpty }

        mutating func append(_ unit: WorkUnit) {
            ordinals.append(Int64(unit.ordinal))
            tiles.append(Int64(unit.tiles))
            switch unit.scope {
            case .resources:
                kinds.append(0)
                pyramids.append(nil); zoomMins.append(nil); zoomMaxes.append(nil)
                rowMins.append(nil); rowMaxes.append(nil); columnMins.append(nil); columnMaxes.append(nil)
            case .zooms(let pyramid, let zooms):
                kinds.append(1)
                pyramids.append(Int64(pyramid)); zoomMins.append(Int64(zooms.lowerBound)); zoomMaxes.append(Int64(zooms.upperBound))
                rowMins.append(nil); rowMaxes.append(nil); columnMins.append(nil); columnMaxes.append(nil)
            case .window(let pyramid, let zoom, let rows, let columns):
                kinds.append(2)
                pyramids.append(Int64(pyramid)); zoomMins.append(Int64(zoom)); zoomMaxes.append(Int64(zoom))
                rowMins.append(Int64(rows.lowerBound)); rowMaxes.append(Int64(rows.upperBound))
                columnMins.append(Int64(columns.lowerBound)); columnMaxes.append(Int64(columns.upperBound))
            }
        }

        var parameters: [PostgresValue] {
            [ordinals, kinds, pyramids, zoomMins, zoomMaxes, rowMins, rowMaxes, columnMins, columnMaxes, tiles].map { .int8Array($0) }
        }
    }
}
