/// `GET /v1/cluster` (openapi's `Cluster`): the nodes serving one database and the work units of
/// its active packs, all read in one snapshot of the database, so the units the nodes hold add
/// up to `units.leased`. SQLite mode is a cluster of one node that holds no units.
public struct ClusterStatus: Sendable, Equatable, Codable {
    public enum Mode: String, Sendable, Codable {
        case sqlite
        case postgresql
    }

    /// A node: a `packd serve` process whose heartbeat is recent, or that still holds a unit
    /// under a lease that has not run out.
    public struct Node: Sendable, Equatable, Codable {
        public var id: Int64
        /// The address the node serves on (`host:port`).
        public var listen: String
        public var version: String
        public var startedAt: Timestamp
        public var lastHeartbeatAt: Timestamp
        /// Work units of active packs the node holds under a lease that has not run out (read
        /// from the units, in the same snapshot as `units`).
        public var unitsHeld: Int
        /// Upstream transfers the node had running at `lastHeartbeatAt`.
        public var transfersInFlight: Int
        /// The node's part of the cluster's per-host transfer cap, as it published it (nil in
        /// SQLite mode).
        public var transferShare: Int?

        public init(id: Int64, listen: String, version: String, startedAt: Timestamp, lastHeartbeatAt: Timestamp,
                    unitsHeld: Int, transfersInFlight: Int, transferShare: Int?) {
            self.id = id
            self.listen = listen
            self.version = version
            self.startedAt = startedAt
            self.lastHeartbeatAt = lastHeartbeatAt
            self.unitsHeld = unitsHeld
            self.transfersInFlight = transfersInFlight
            self.transferShare = transferShare
        }

        private enum CodingKeys: String, CodingKey {
            case id, listen, version
            case startedAt = "started_at"
            case lastHeartbeatAt = "last_heartbeat_at"
            case unitsHeld = "units_held"
            case transfersInFlight = "transfers_in_flight"
            case transferShare = "transfer_share"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(listen, forKey: .listen)
            try container.encode(version, forKey: .version)
            try container.encode(startedAt, forKey: .startedAt)
            try container.encode(lastHeartbeatAt, forKey: .lastHeartbeatAt)
            try container.encode(unitsHeld, forKey: .unitsHeld)
            try container.encode(transfersInFlight, forKey: .transfersInFlight)
            // Always present: null in SQLite mode.
            try container.encode(transferShare, forKey: .transferShare)
        }
    }

    /// One active pack's work units by state.
    public struct PackUnits: Sendable, Equatable, Codable {
        public var id: Int64
        public var units: Units

        public init(id: Int64, units: Units) {
            self.id = id
            self.units = units
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
    /// Every active pack's units together.
    public var units: Units
    /// Each active pack cut into units, by id.
    public var packs: [PackUnits]

    public init(mode: Mode, nodes: [Node], units: Units, packs: [PackUnits] = []) {
        self.mode = mode
        self.nodes = nodes
        self.units = units
        self.packs = packs
    }
}
