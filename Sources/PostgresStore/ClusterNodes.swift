import Postgres
import WorkSharing

/// The node table: a `packd serve` process registers at start, heartbeats (renewing its unit
/// leases in the same transaction, see `WorkUnitLeases.renew`), and marks itself stopped at a
/// clean shutdown. A node is live while its last heartbeat is younger than `timing.liveness` by
/// the database's clock; the live nodes share the cluster-wide allowances (`ClusterShare`).
public struct ClusterNodes: Sendable {
    public let timing: LeaseTiming

    public init(timing: LeaseTiming = .standard) {
        self.timing = timing
    }

    /// A row of the node table, as `GET /v1/cluster` shows it.
    public struct Node: Hashable, Sendable {
        public let id: Int64
        public let name: String
        public let listenAddress: String
        public let version: String
        /// Unix seconds (fractional), by the database's clock.
        public let startedAt: Double
        public let heartbeatAt: Double
        /// Seconds since registration, by the database's clock.
        public let age: Double
        public let unitsHeld: Int
        public let transfersInFlight: Int
    }

    /// Registers a node; its id.
    public func register(name: String, listenAddress: String, version: String,
                         on connection: PostgresConnection) throws -> Int64 {
        let rows = try connection.query("""
            INSERT INTO packd_nodes (name, listen_address, version) VALUES ($1, $2, $3) RETURNING id
            """, [.text(String(name.prefix(200))), .text(String(listenAddress.prefix(200))), .text(String(version.prefix(100)))])
        guard let row = rows.first else {
            throw PostgresError(kind: .decoding, message: "INSERT … RETURNING returned no row", sql: rows.sql)
        }
        return try row.int64(0)
    }

    /// Sets the address the node serves on (known once it listens).
    public func setListenAddress(_ address: String, node: Int64, on connection: PostgresConnection) throws {
        try connection.query("UPDATE packd_nodes SET listen_address = $2 WHERE id = $1",
                             [.int8(node), .text(String(address.prefix(200)))])
    }

    /// Records that `node` is alive with what it holds; the live nodes afterwards (itself
    /// included). False in `stillRegistered` when the row is gone or marked stopped (a node must
    /// then register again).
    public func heartbeat(node: Int64, unitsHeld: Int, transfersInFlight: Int,
                          on connection: PostgresConnection) throws -> (stillRegistered: Bool, live: [Node]) {
        let updated = try connection.query("""
            UPDATE packd_nodes SET heartbeat_at = now(), units_held = $2, transfers_in_flight = $3
            WHERE id = $1 AND stopped_at IS NULL
            """, [.int8(node), .int8(Int64(unitsHeld)), .int8(Int64(transfersInFlight))]).affectedRows == 1
        return (updated, try live(on: connection))
    }

    /// The live nodes, lowest id first.
    public func live(on connection: PostgresConnection) throws -> [Node] {
        let rows = try connection.query("""
            SELECT id, name, listen_address, version, extract(epoch FROM started_at)::float8,
                   extract(epoch FROM heartbeat_at)::float8, extract(epoch FROM now() - started_at)::float8,
                   units_held, transfers_in_flight
            FROM packd_nodes
            WHERE stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1)
            ORDER BY id
            """, [.float8(timing.liveness)])
        return try rows.map { row in
            Node(id: try row.int64(0), name: try row.string(1), listenAddress: try row.string(2), version: try row.string(3),
                 startedAt: try row.doubleOrNil(4) ?? 0, heartbeatAt: try row.doubleOrNil(5) ?? 0,
                 age: try row.doubleOrNil(6) ?? 0, unitsHeld: Int(try row.int64(7)), transfersInFlight: Int(try row.int64(8)))
        }
    }

    /// The share computation over `live` for a newly registered node's settling time.
    public func share(among live: [Node], transferAllowance: Double) -> ClusterShare {
        ClusterShare(members: live.map { ClusterShare.Member(id: $0.id, age: $0.age) },
                     settling: timing.settling(transferAllowance: transferAllowance))
    }

    /// A clean shutdown: gives back the node's units and marks it stopped, in one transaction.
    public func stop(node: Int64, on connection: PostgresConnection) throws {
        try connection.transaction {
            try WorkUnitLeases(node: node, timing: timing).release(on: connection)
            try connection.query("UPDATE packd_nodes SET stopped_at = now() WHERE id = $1", [.int8(node)])
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
}
