/// `GET /v1/cluster` (openapi's `Cluster`): the nodes serving one database and the work units of
/// its active packs. SQLite mode is a cluster of one node that holds no units.
public struct ClusterStatus: Sendable, Equatable, Codable {
    public enum Mode: String, Sendable, Codable {
        case sqlite
        case postgresql
    }

    /// A live node: a `packd serve` process whose heartbeat is recent.
    public struct Node: Sendable, Equatable, Codable {
        public var id: Int64
        /// The address the node serves on (`host:port`).
        public var listen: String
        public var version: String
        public var startedAt: Timestamp
        public var lastHeartbeatAt: Timestamp
        /// Work units the node holds under a lease.
        public var unitsHeld: Int
        /// Upstream transfers the node has running.
        public var transfersInFlight: Int

        public init(id: Int64, listen: String, version: String, startedAt: Timestamp, lastHeartbeatAt: Timestamp,
                    unitsHeld: Int, transfersInFlight: Int) {
            self.id = id
            self.listen = listen
            self.version = version
            self.startedAt = startedAt
            self.lastHeartbeatAt = lastHeartbeatAt
            self.unitsHeld = unitsHeld
            self.transfersInFlight = transfersInFlight
        }

        private enum CodingKeys: String, CodingKey {
            case id, listen, version
            case startedAt = "started_at"
            case lastHeartbeatAt = "last_heartbeat_at"
            case unitsHeld = "units_held"
            case transfersInFlight = "transfers_in_flight"
        }
    }

    /// The work units of active packs by state (a lease that ran out counts as pending).
    public struct Units: Sendable, Equatable, Codable {
        public var pending: Int
        public var leased: Int
        public var done: Int

        public init(pending: Int = 0, leased: Int = 0, done: Int = 0) {
            self.pending = pending
            self.leased = leased
            self.done = done
        }
    }

    public var mode: Mode
    public var nodes: [Node]
    public var units: Units

    public init(mode: Mode, nodes: [Node], units: Units) {
        self.mode = mode
        self.nodes = nodes
        self.units = units
    }
}
