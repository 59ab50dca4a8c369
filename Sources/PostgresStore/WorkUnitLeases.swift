import Packs
import Plan
import Postgres
import WorkSharing

/// The SQL of work sharing, for one node: storing a pack's cut, claiming units with
/// `FOR UPDATE SKIP LOCKED` (two nodes never get the same unit) and splitting them at claim
/// time, renewing leases with the heartbeat, finishing and giving units back. Expiry is judged
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
                try insert(batch, pack: pack, on: connection)
                stored += batch.count
                batch = UnitColumns()
            }
            for unit in cut {
                batch.append(unit.scope, tiles: unit.tiles, ordinal: unit.ordinal)
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

    /// How a node cuts the units it claims of one pack (`ClaimSizing`, `WorkUnitSplit`).
    public struct ClaimCut: Sendable {
        /// The node's plan of the pack: what unit scopes point into.
        public let pyramids: [TilePyramid]
        /// How many fixed resources the plan has (the resources unit is cut by position).
        public let fixedResources: Int
        public let sizing: ClaimSizing
        /// Claim slots in the cluster: live nodes × units a node runs of a pack at once.
        public let slots: Int

        public init(pyramids: [TilePyramid], fixedResources: Int = 0, sizing: ClaimSizing, slots: Int) {
            self.pyramids = pyramids
            self.fixedResources = max(0, fixedResources)
            self.sizing = sizing
            self.slots = max(1, slots)
        }
    }

    /// Claims up to `limit` units of `pack` that are pending or whose lease expired, lowest
    /// ordinal first — with `near` (the pack's start area), nearest its centre first
    /// (`StartAreaClaimOrder`) — for `timing.lease` seconds, one transaction each. With `cut`, a unit larger
    /// than the claim's part (`ClaimSizing.part` of the pack's unclaimed tiles) is split: the
    /// head is leased under a new ordinal, the rest stays claimable in the unit's place (what
    /// does not fit in one unit, under more new ordinals; new ordinals come from a sequence).
    /// Rows another claimer has locked are skipped, never waited for: a claimer waits for no
    /// other node, not even one frozen in the middle of its own claim.
    public func claim(pack: Int64, limit: Int, cut: ClaimCut? = nil, near: StartAreaClaimOrder? = nil,
                      on connection: PostgresConnection) throws -> [Claimed] {
        var claimed: [Claimed] = []
        while claimed.count < limit,
              let unit = try connection.transaction(.readCommitted, { try claimOne(pack: pack, cut: cut, near: near, on: connection) }) {
            claimed.append(unit)
        }
        return claimed
    }

    private func claimOne(pack: Int64, cut: ClaimCut?, near: StartAreaClaimOrder?, on connection: PostgresConnection) throws -> Claimed? {
        // A glyph choice (kind 3) waits until every other unit of the pack is done.
        let claimable = """
            pack_id = $1 AND state <> '\(WorkUnitState.done.rawValue)'
              AND (state = '\(WorkUnitState.pending.rawValue)' OR lease_expires_at < now())
              AND (kind <> 3 OR NOT EXISTS (SELECT 1 FROM packd_work_units o WHERE o.pack_id = $1 AND o.kind <> 3
                                              AND o.state <> '\(WorkUnitState.done.rawValue)'))
            """
        guard let row = try connection.query("""
            SELECT \(Self.unitColumns), u.claims, u.stored_tiles FROM packd_work_units u
            WHERE \(claimable) ORDER BY \(near == nil ? "" : Self.distance(x: "$2", y: "$3", metresPerUnit: "$4") + ", ")ordinal
            LIMIT 1 FOR UPDATE SKIP LOCKED
            """, [.int8(pack)] + (near.map { [.float8($0.centerX), .float8($0.centerY), .float8($0.metresPerUnit)] } ?? [])).first
        else { return nil }
        let unit = try Self.unit(row)
        let claims = Int(try row.int64(11)) + 1
        let lease: [PostgresValue] = [.int8(node), .float8(timing.lease)]
        if let cut {
            let remaining = try connection.scalarInt(
                "SELECT coalesce(sum(tiles), 0)::int8 FROM packd_work_units WHERE \(claimable)", [.int8(pack)]) ?? 0
            let part = cut.sizing.part(remaining: Int(clamping: remaining), slots: cut.slots)
            if cut.sizing.splits(WorkUnitSplit.size(of: unit, fixedResources: cut.fixedResources), part: part),
               let parts = WorkUnitSplit.split(unit.scope, part: part, pyramids: cut.pyramids, fixedResources: cut.fixedResources) {
                let ordinals = try connection.query("SELECT nextval('packd_work_unit_parts')::int8 FROM generate_series(1, $1)",
                                                    [.int8(Int64(parts.count - 1))]).map { Int(try $0.int64(0)) }
                var columns = UnitColumns()
                columns.append(parts[1].scope, tiles: parts[1].tiles, ordinal: unit.ordinal)
                try connection.query("""
                    UPDATE packd_work_units AS u
                    SET kind = c.kind, pyramid = c.pyramid, zoom_min = c.zoom_min, zoom_max = c.zoom_max, row_min = c.row_min,
                        row_max = c.row_max, column_min = c.column_min, column_max = c.column_max, tiles = c.tiles,
                        state = '\(WorkUnitState.pending.rawValue)', lease_owner = NULL, lease_expires_at = NULL, stored_tiles = 0
                    FROM (SELECT * FROM unnest($2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::int8[],
                                               $9::int8[], $10::int8[], $11::int8[])
                          AS c (ordinal, kind, pyramid, zoom_min, zoom_max, row_min, row_max, column_min, column_max, tiles)) c
                    WHERE u.pack_id = $1 AND u.ordinal = c.ordinal
                    """, [.int8(pack)] + columns.parameters)
                var rest = UnitColumns()
                for (ordinal, piece) in zip(ordinals.dropFirst(), parts.dropFirst(2)) {
                    rest.append(piece.scope, tiles: piece.tiles, ordinal: ordinal)
                }
                if !rest.isEmpty { try Self.insert(rest, pack: pack, on: connection) }
                var head = UnitColumns()
                head.append(parts[0].scope, tiles: parts[0].tiles, ordinal: ordinals[0])
                try Self.insert(head, pack: pack, on: connection)
                try connection.query("""
                    UPDATE packd_work_units SET state = '\(WorkUnitState.leased.rawValue)', lease_owner = $3,
                      lease_expires_at = now() + make_interval(secs => $4), claims = $5
                    WHERE pack_id = $1 AND ordinal = $2
                    """, [.int8(pack), .int8(Int64(ordinals[0]))] + lease + [.int8(Int64(claims))])
                return Claimed(pack: pack, unit: WorkUnit(ordinal: ordinals[0], scope: parts[0].scope, tiles: parts[0].tiles),
                               claims: claims, storedTiles: 0)
            }
        }
        try connection.query("""
            UPDATE packd_work_units SET state = '\(WorkUnitState.leased.rawValue)', lease_owner = $3,
              lease_expires_at = now() + make_interval(secs => $4), claims = claims + 1
            WHERE pack_id = $1 AND ordinal = $2
            """, [.int8(pack), .int8(Int64(unit.ordinal))] + lease)
        return Claimed(pack: pack, unit: unit, claims: claims, storedTiles: try row.int64(12))
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

    /// Adds pending units of `pack` (a glyph choice's ranges), numbered from the sequence the
    /// parts split off at claim time use.
    public static func add(_ scopes: [WorkUnit.Scope], pack: Int64, on connection: PostgresConnection) throws {
        guard !scopes.isEmpty else { return }
        let ordinals = try connection.query("SELECT nextval('packd_work_unit_parts')::int8 FROM generate_series(1, $1)",
                                            [.int8(Int64(scopes.count))]).map { Int(try $0.int64(0)) }
        var units = UnitColumns()
        for (ordinal, scope) in zip(ordinals, scopes) { units.append(scope, tiles: 0, ordinal: ordinal) }
        try insert(units, pack: pack, on: connection)
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

    /// `StartAreaClaimOrder.distance` of a unit row in SQL, the centre and scale as parameters:
    /// -1 for the fixed resources, 0 for whole zooms, infinity for a glyph choice, else metres
    /// from the centre to the window.
    static func distance(x: String, y: String, metresPerUnit: String) -> String {
        let scale = "power(2::float8, zoom_min::float8)"
        return """
            (CASE WHEN kind = 0 THEN -1::float8 WHEN kind = 1 THEN 0::float8 WHEN kind = 3 THEN 'Infinity'::float8 ELSE sqrt(
               power(greatest(column_min::float8 / \(scale) - \(x), 0::float8, \(x) - (column_max + 1)::float8 / \(scale)), 2)
             + power(greatest(row_min::float8 / \(scale) - \(y), 0::float8, \(y) - (row_max + 1)::float8 / \(scale)), 2)
             ) * \(metresPerUnit) END)
            """
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
            guard let first = try row.int64OrNil(6), let last = try row.int64OrNil(7) else {
                return WorkUnit(ordinal: ordinal, scope: .resources, tiles: tiles)
            }
            return WorkUnit(ordinal: ordinal, scope: .fixed(Int(first)...Int(last)), tiles: tiles)
        case 1:
            return WorkUnit(ordinal: ordinal, scope: .zooms(pyramid: Int(try row.int64(3)),
                                                            Int(try row.int64(4))...Int(try row.int64(5))), tiles: tiles)
        case 3:
            return WorkUnit(ordinal: ordinal, scope: .glyphChoice, tiles: tiles)
        default:
            return WorkUnit(ordinal: ordinal, scope: .window(
                pyramid: Int(try row.int64(3)), zoom: Int(try row.int64(4)),
                rows: Int(try row.int64(6))...Int(try row.int64(7)),
                columns: Int(try row.int64(8))...Int(try row.int64(9))), tiles: tiles)
        }
    }

    /// Inserts pending units of `pack`.
    private static func insert(_ units: UnitColumns, pack: Int64, on connection: PostgresConnection) throws {
        try connection.query("""
            INSERT INTO packd_work_units (pack_id, ordinal, kind, pyramid, zoom_min, zoom_max, row_min, row_max,
                                          column_min, column_max, tiles)
            SELECT $1, * FROM unnest($2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::int8[],
                                     $8::int8[], $9::int8[], $10::int8[], $11::int8[])
            """, [.int8(pack)] + units.parameters)
    }

    /// Units as column arrays for one `unnest` statement.
    private struct UnitColumns {
        var ordinals: [Int64?] = [], kinds: [Int64?] = [], pyramids: [Int64?] = []
        var zoomMins: [Int64?] = [], zoomMaxes: [Int64?] = []
        var rowMins: [Int64?] = [], rowMaxes: [Int64?] = [], columnMins: [Int64?] = [], columnMaxes: [Int64?] = []
        var tiles: [Int64?] = []

        var count: Int { ordinals.count }
        var isEmpty: Bool { ordinals.isEmpty }

        mutating func append(_ scope: WorkUnit.Scope, tiles count: Int, ordinal: Int) {
            ordinals.append(Int64(ordinal))
            tiles.append(Int64(count))
            switch scope {
            case .resources:
                kinds.append(0)
                pyramids.append(nil); zoomMins.append(nil); zoomMaxes.append(nil)
                rowMins.append(nil); rowMaxes.append(nil); columnMins.append(nil); columnMaxes.append(nil)
            case .fixed(let positions):
                // Kind 0 with a range in the row columns: positions in the plan's fixed resources.
                kinds.append(0)
                pyramids.append(nil); zoomMins.append(nil); zoomMaxes.append(nil)
                rowMins.append(Int64(positions.lowerBound)); rowMaxes.append(Int64(positions.upperBound))
                columnMins.append(nil); columnMaxes.append(nil)
            case .zooms(let pyramid, let zooms):
                kinds.append(1)
                pyramids.append(Int64(pyramid)); zoomMins.append(Int64(zooms.lowerBound)); zoomMaxes.append(Int64(zooms.upperBound))
                rowMins.append(nil); rowMaxes.append(nil); columnMins.append(nil); columnMaxes.append(nil)
            case .glyphChoice:
                kinds.append(3)
                pyramids.append(nil); zoomMins.append(nil); zoomMaxes.append(nil)
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
