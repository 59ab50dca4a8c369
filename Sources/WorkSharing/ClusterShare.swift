/// How a cluster-wide allowance (the per-host transfer cap, and with it the per-host request
/// rate) is shared out between the live nodes, so three nodes never hit one upstream harder than
/// one node would — and how a node's part moves when nodes join or leave without the cluster
/// ever standing idle.
///
/// Every node publishes in the node table the part it holds (it may be using): the sum of the
/// published parts of the live nodes never exceeds the allowance. A node's fair part is the
/// allowance divided by the live nodes, the remainder one each to the lowest ids. Moving to it:
/// - down (a node joined): the node stops starting transfers above its new part at once, and
///   publishes the lower part only once its transfers are down to it (`Decision.shrink`);
/// - up (a node left, or it is the newcomer): it takes at once what the others leave free —
///   the allowance minus their published parts, read and raised under one lock so two nodes
///   growing at once cannot both take the same room (`Decision.grow`), and the rest as the others
///   publish their shrinks.
/// So a newcomer starts with what the others released, within one round trip of their
/// transfers, and never on top of it. A node that dies frees its part once it is known to have
/// stopped: its database session gone after two silent heartbeats (its process closed its
/// connections), or — frozen, cut off — silent for as long as a node takes to fence itself
/// (`LeaseTiming.isFenced`); back from a fence, a node starts again from nothing.
public struct ClusterShare: Sendable {
    public struct Member: Hashable, Sendable {
        public let id: Int64
        /// The part of the allowance the member published (it may be using up to that).
        public let held: Int

        public init(id: Int64, held: Int) {
            self.id = id
            self.held = max(0, held)
        }
    }

    public enum Decision: Hashable, Sendable {
        /// Keep what is held.
        case keep(Int)
        /// Take this much now (published before it is used).
        case grow(Int)
        /// Use no more than this from now on; publish it once the transfers are down to it.
        case shrink(Int)

        /// The part to use from now on.
        public var part: Int {
            switch self {
            case .keep(let part), .grow(let part), .shrink(let part): part
            }
        }
    }

    /// The live members (heartbeat not expired), this node included, lowest id first.
    public let members: [Member]
    public let allowance: Int

    public init(members: [Member], allowance: Int) {
        self.members = members.sorted { $0.id < $1.id }
        self.allowance = max(0, allowance)
    }

    /// `node`'s fair part: an even split, the remainder one each to the lowest ids, so the parts
    /// sum to exactly the allowance (a node gets 0 when nodes outnumber it). 0 for a non-member.
    public func fair(for node: Int64) -> Int {
        guard allowance > 0, let rank = members.firstIndex(where: { $0.id == node }) else { return 0 }
        return allowance / members.count + (rank < allowance % members.count ? 1 : 0)
    }

    /// What `node` does about its part: shrink to its fair part when it holds more, grow towards
    /// it by what the others leave free when it holds less.
    public func decide(for node: Int64) -> Decision {
        let held = members.first { $0.id == node }?.held ?? 0
        let fair = fair(for: node)
        if fair < held { return .shrink(fair) }
        let others = members.reduce(0) { $0 + ($1.id == node ? 0 : $1.held) }
        let free = max(0, allowance - others)
        let grown = max(held, min(fair, free))
        return grown > held ? .grow(grown) : .keep(held)
    }

    /// The part of a rate (requests per second per host) that goes with `part` of `allowance`.
    public static func rate(_ rate: Double, for part: Int, of allowance: Int) -> Double {
        guard rate > 0, allowance > 0 else { return 0 }
        return rate * Double(max(0, min(part, allowance))) / Double(allowance)
    }
}
