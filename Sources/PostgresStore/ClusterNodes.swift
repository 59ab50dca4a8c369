import Postgres
import WorkSharing

/// The node table: a `packd serve` process registers at start, heartbeats (renewing its unit
/// leases in the same transaction, see `WorkUnitLeases.renew`), publishes its part of the
/// cluster-wide allowances (`ClusterShare`), and marks itself stopped at a clean shutdown. A node
/// is live while its last heartbeat is younger than `timing.liveness` by the database's clock.
/// Joining, leaving and giving back part of an allowance notify `ShareChannel`, so the others
/// move their parts at once rather than at their next heartbeat.
public struct ClusterNodes: Sendable {
    public let timing: LeaseTiming

    public init(timing: LeaseTiming = .standard) {
        self.timing = timing
    }

    /// A live node, as the node table has it.
    public struct Node: Hashable, Sendable {
        public let id: Int64
        public let name: String
        public let listenAddress: String
        public let version: String
        /// Unix seconds (fractional), by the database's clock.
        public let startedAt: Double
        public let heartbeatAt: Double
        /// Upstream transfers running at its last heartbeat.
        public let transfersInFlight: Int
        /// The part of the per-host transfer cap it published.
        public let transferShare: Int
    }

    /// Registers a node (holding no part of any allowance yet) and tells the others; its id.
    public func register(name: String, listenAddress: String, version: String,
                         on connection: PostgresConnection) throws -> Int64 {
        try connection.transaction {
            let rows = try connection.query("""
                INSERT INTO packd_nodes (name, listen_address, version) VALUES ($1, $2, $3) RETURNING id
                """, [.text(String(name.prefix(200))), .text(String(listenAddress.prefix(200))), .text(String(version.prefix(100)))])
            guard let row = rows.first else {
                throw PostgresError(kind: .decoding, message: "INSERT … RETURNING returned no row", sql: rows.sql)
            }
            let node = try row.int64(0)
            try Self.notifyShares(node: node, on: connection)
            return node
        }
    }

    /// Sets the address the node serves on (known once it listens).
    public func setListenAddress(_ address: String, node: Int64, on connection: PostgresConnection) throws {
        try connection.query("UPDATE packd_nodes SET listen_address = $2 WHERE id = $1",
                             [.int8(node), .text(String(address.prefix(200)))])
    }

    /// Records that `node` is alive with its transfers in flight; the live nodes afterwards
    /// (itself included). False in `stillRegistered` when the row is gone or marked stopped (a
    /// node must then register again).
    public func heartbeat(node: Int64, transfersInFlight: Int,
                          on connection: PostgresConnection) throws -> (stillRegistered: Bool, live: [Node]) {
        let updated = try connection.query("""
            UPDATE packd_nodes SET heartbeat_at = now(), transfers_in_flight = $2, session_pid = pg_backend_pid()
            WHERE id = $1 AND stopped_at IS NULL
            """, [.int8(node), .int8(Int64(transfersInFlight))]).affectedRows == 1
        return (updated, try live(on: connection))
    }

    /// The live nodes, lowest id first.
    public func live(on connection: PostgresConnection) throws -> [Node] {
        let rows = try connection.query("""
            SELECT id, name, listen_address, version, extract(epoch FROM started_at)::float8,
                   extract(epoch FROM heartbeat_at)::float8, transfers_in_flight, transfer_share
            FROM packd_nodes
            WHERE stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1)
            ORDER BY id
            """, [.float8(timing.liveness)])
        return try rows.map { row in
            Node(id: try row.int64(0), name: try row.string(1), listenAddress: try row.string(2), version: try row.string(3),
                 startedAt: try row.doubleOrNil(4) ?? 0, heartbeatAt: try row.doubleOrNil(5) ?? 0,
                 transfersInFlight: Int(try row.int64(6)), transferShare: Int(try row.int64(7)))
        }
    }

    // MARK: Parts of the allowances

    /// What `node` does about its part of `allowance` (`ClusterShare.decide`), decided and — for
    /// a growth — published under the shares lock, so the parts the members may be using never
    /// sum past the allowance. A shrink is only decided here: the node publishes it with
    /// `publishShare` once its transfers are down to it. `afresh`: the node stopped all its
    /// transfers (it fenced itself) and comes back — its old part is published as 0 first, and it
    /// grows like a newcomer.
    ///
    /// The members are the nodes that may be transferring: live, and not silent for longer than
    /// a node takes to fence itself (`fencingDelay` and a heartbeat: it has stopped). A member
    /// silent for two heartbeats whose session PostgreSQL no longer has is dead (its process
    /// closed its connections): it counts, for a fair split, but its part is free.
    public func decideShare(node: Int64, allowance: Int, afresh: Bool = false,
                            on connection: PostgresConnection) throws -> ClusterShare.Decision {
        try connection.transaction {
            try connection.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                                 [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.shares.rawValue))])
            if afresh {
                try connection.query("UPDATE packd_nodes SET transfer_share = 0 WHERE id = $1", [.int8(node)])
            }
            let members = try connection.query("""
                SELECT n.id, CASE WHEN n.heartbeat_at < now() - make_interval(secs => $2)
                                   AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = n.session_pid)
                                  THEN 0 ELSE n.transfer_share END
                FROM packd_nodes n
                WHERE n.stopped_at IS NULL AND n.heartbeat_at > now() - make_interval(secs => $1)
                """, [.float8(timing.fencingDelay + timing.heartbeatInterval), .float8(2 * timing.heartbeatInterval)]).map {
                ClusterShare.Member(id: try $0.int64(0), held: Int(try $0.int64(1)))
            }
            let decision = ClusterShare(members: members, allowance: allowance).decide(for: node)
            if case .grow(let part) = decision {
                try connection.query("UPDATE packd_nodes SET transfer_share = $2 WHERE id = $1", [.int8(node), .int8(Int64(part))])
            }
            return decision
        }
    }

    /// Publishes a smaller part (the node's transfers are down to it) and tells the others,
    /// which may grow into what it released.
    public func publishShare(node: Int64, part: Int, on connection: PostgresConnection) throws {
        try connection.transaction {
            try connection.query("UPDATE packd_nodes SET transfer_share = least(transfer_share, $2) WHERE id = $1",
                                 [.int8(node), .int8(Int64(max(0, part)))])
            try Self.notifyShares(node: node, on: connection)
        }
    }

    /// A clean shutdown: gives back the node's units and its parts and marks it stopped, in one
    /// transaction, and tells the others.
    public func stop(node: Int64, on connection: PostgresConnection) throws {
        try connection.transaction {
            try WorkUnitLeases(node: node, timing: timing).release(on: connection)
            try connection.query("UPDATE packd_nodes SET stopped_at = now(), transfer_share = 0 WHERE id = $1", [.int8(node)])
            try Self.notifyShares(node: node, on: connection)
        }
    }

    /// Deletes nodes stopped or silent for longer than `age` seconds that hold no unit, so the
    /// table does not grow with every restart. Returns how many.
    @discardableResult
    public func forget(olderThan age: Double, on connection: PostgresConnection) throws -> Int {
        try connection.query("""
            DELETE FROM packd_nodes n
            WHERE coalesce(n.stopped_at, n.heartbeat_at) < now() - make_interval(secs => $1)
              AND NOT EXISTS (SELECT 1 FROM packd_work_units u WHERE u.lease_owner = n.id)
            """, [.float8(age)]).affectedRows
    }

    /// The counter slot (`packd_totals.slot`) a node adds to.
    public static func totalsSlot(node: Int64) -> Int64 { ((node % 64) + 64) % 64 }

    private static func notifyShares(node: Int64, on connection: PostgresConnection) throws {
        try connection.query("SELECT pg_notify($1, $2)", [.text(ShareChannel.name), .text(String(node))])
    }
}
