/// How a cluster-wide allowance (a per-host transfer cap, a request rate, `--max-active-packs`'
/// downloads) is shared out between the live nodes, so three nodes never hit one upstream three
/// times harder than one node would.
///
/// Every node computes its own share from the same node table, no coordinator: the allowance
/// divided by the number of members, the remainder going one each to the lowest node ids, so the
/// shares sum to exactly the allowance (and a node may get 0 when nodes outnumber it).
///
/// Membership changes are where the sum could overshoot: when a node joins, the others shrink
/// their shares only at their next heartbeat. So a node counts as a member (and is counted by
/// the others) from the moment it registers, but takes no share until it has been registered
/// for `settling` — long enough (at least one heartbeat interval plus the time a transfer takes
/// to finish) for every other node to have seen it and shrunk. A node that leaves or dies frees
/// its share only when its heartbeat has expired, and a node that cannot heartbeat stops its own
/// transfers before that (see `LeaseTiming.isFenced`).
public struct ClusterShare: Sendable {
    public struct Member: Hashable, Sendable {
        public let id: Int64
        /// Seconds since the member registered, by the database's clock.
        public let age: Double

        public init(id: Int64, age: Double) {
            self.id = id
            self.age = age
        }
    }

    /// The live members (heartbeat not expired), this node included.
    public let members: [Member]
    public let settling: Double

    public init(members: [Member], settling: Double) {
        self.members = members.sorted { $0.id < $1.id }
        self.settling = settling
    }

    /// `node`'s part of `allowance`; 0 while it settles or when it is not a member.
    public func share(of allowance: Int, for node: Int64) -> Int {
        guard allowance > 0, let rank = members.firstIndex(where: { $0.id == node }) else { return 0 }
        if members[rank].age < settling { return 0 }
        let base = allowance / members.count
        return base + (rank < allowance % members.count ? 1 : 0)
    }

    /// `node`'s part of a rate (requests or bytes per second), an even split.
    public func share(ofRate rate: Double, for node: Int64) -> Double {
        guard rate > 0, let member = members.first(where: { $0.id == node }), member.age >= settling else { return 0 }
        return rate / Double(members.count)
    }
}
