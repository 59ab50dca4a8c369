/// The clock rules of leases and heartbeats. Expiry is decided by the database's clock (`now()`
/// in the claim and renewal statements), never a node's, so skewed node clocks cannot make two
/// nodes believe they hold one unit; a node only needs its own monotonic clock to know how long
/// ago its last renewal succeeded.
public struct LeaseTiming: Hashable, Sendable {
    /// How long a claim or renewal holds a unit.
    public let lease: Double
    /// How often a node heartbeats and renews: every second, and at least four times per lease,
    /// so a renewal can be late or fail once (a slow database, a loaded node, a dropped
    /// connection) and the next still comes before the node must fence itself (`fencingDelay`),
    /// and three before the lease runs out. (A third of a lease left a renewal half an interval:
    /// under load, nodes fenced themselves.) Every second, because the heartbeat is also what
    /// `GET /v1/cluster` shows of a node's transfers in flight.
    public var heartbeatInterval: Double { min(lease / 4, Self.longestHeartbeatInterval) }

    /// The longest time between two heartbeats, whatever the lease.
    public static let longestHeartbeatInterval = 1.0

    public init(lease: Double) {
        precondition(lease > 0, "a lease must last")
        self.lease = lease
    }

    public static let standard = LeaseTiming(lease: 30)

    /// How long a node has gone without a renewal before it must consider its leases lost and
    /// stop working on them: half a lease after the last success, well before the database lets
    /// another node claim them (a node's monotonic clock and the database's may drift a little,
    /// and in-flight transfers need time to stop).
    public var fencingDelay: Double { lease / 2 }

    /// Whether a node whose last successful renewal was `sinceRenewal` seconds ago is fenced.
    public func isFenced(sinceRenewal: Double) -> Bool { sinceRenewal >= fencingDelay }

    /// A node's heartbeat counts it live for this long (its units' leases last as long).
    public var liveness: Double { lease }
}
