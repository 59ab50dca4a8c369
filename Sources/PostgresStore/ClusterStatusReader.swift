import Packs
import Postgres
import WorkSharing

/// `GET /v1/cluster` from the database, in one snapshot (a repeatable-read transaction: one
/// `now()`, one view of the rows), so what it says adds up: each node's `units_held` is counted
/// from the units with the same rule as `units.leased` (a lease that ran out counts as pending),
/// and the nodes listed are the live ones plus any still holding a lease, so the held units of
/// the nodes sum to `units.leased` exactly. Transfers in flight are as of each node's last
/// heartbeat, which the answer dates.
public struct ClusterStatusReader: Sendable {
    public let timing: LeaseTiming

    public init(timing: LeaseTiming = .standard) {
        self.timing = timing
    }

    public func read(on connection: PostgresConnection) throws -> ClusterStatus {
        try connection.transaction(.repeatableRead) {
            let effective = """
                CASE WHEN u.state = '\(WorkUnitState.leased.rawValue)' AND u.lease_expires_at < now()
                     THEN '\(WorkUnitState.pending.rawValue)' ELSE u.state END
                """
            let active = [PostgresValue.text(PackState.active.rawValue)]
            var packs: [Int64: ClusterStatus.Units] = [:]
            for row in try connection.query("""
                SELECT u.pack_id, \(effective) AS effective, count(*)::int8
                FROM packd_work_units u JOIN packd_packs p ON p.region_id = u.pack_id
                WHERE p.state = $1 GROUP BY u.pack_id, effective
                """, active) {
                let pack = try row.int64(0)
                let count = Int(try row.int64(2))
                var units = packs[pack] ?? ClusterStatus.Units()
                switch WorkUnitState(rawValue: try row.string(1)) {
                case .pending: units.pending += count
                case .leased: units.leased += count
                case .done: units.done += count
                case nil: break
                }
                packs[pack] = units
            }
            let nodes = try connection.query("""
                WITH held AS (
                  SELECT u.lease_owner AS node, count(*)::int8 AS units
                  FROM packd_work_units u JOIN packd_packs p ON p.region_id = u.pack_id
                  WHERE p.state = $1 AND u.state = '\(WorkUnitState.leased.rawValue)' AND u.lease_expires_at >= now()
                  GROUP BY u.lease_owner)
                SELECT n.id, n.listen_address, n.version, extract(epoch FROM n.started_at)::float8,
                       extract(epoch FROM n.heartbeat_at)::float8, n.transfers_in_flight, n.transfer_share,
                       coalesce(h.units, 0)::int8
                FROM packd_nodes n LEFT JOIN held h ON h.node = n.id
                WHERE (n.stopped_at IS NULL AND n.heartbeat_at > now() - make_interval(secs => $2)) OR h.units IS NOT NULL
                ORDER BY n.id
                """, active + [.float8(timing.liveness)]).map { row in
                ClusterStatus.Node(id: try row.int64(0), listen: try row.string(1), version: try row.string(2),
                                   startedAt: Timestamp(Int64((try row.doubleOrNil(3) ?? 0).rounded(.down))),
                                   lastHeartbeatAt: Timestamp(Int64((try row.doubleOrNil(4) ?? 0).rounded(.down))),
                                   unitsHeld: Int(try row.int64(7)), transfersInFlight: Int(try row.int64(5)),
                                   transferShare: Int(try row.int64(6)))
            }
            let perPack = packs.keys.sorted().map { ClusterStatus.PackUnits(id: $0, units: packs[$0]!) }
            let total = perPack.reduce(into: ClusterStatus.Units()) { sum, pack in
                sum.pending += pack.units.pending
                sum.leased += pack.units.leased
                sum.done += pack.units.done
            }
            return ClusterStatus(mode: .postgresql, nodes: nodes, units: total, packs: perPack)
        }
    }
}
