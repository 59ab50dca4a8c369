import Testing
import WorkSharing

@Suite struct ClusterShareTests {
    static func members(_ held: [Int64: Int]) -> [ClusterShare.Member] {
        held.map { ClusterShare.Member(id: $0.key, held: $0.value) }
    }

    /// Whatever the cap and the number of nodes, the fair parts add up to the cap exactly.
    @Test func fairPartsSumToTheAllowance() {
        for nodes in 1...7 {
            let ids = (0..<nodes).map { Int64(10 + $0 * 3) }
            for cap in 0...40 {
                let share = ClusterShare(members: ids.shuffled().map { ClusterShare.Member(id: $0, held: 0) }, allowance: cap)
                let parts = ids.map { share.fair(for: $0) }
                #expect(parts.reduce(0, +) == cap, "cap \(cap) over \(nodes) nodes: \(parts)")
                #expect(parts.max()! - parts.min()! <= 1)
            }
        }
    }

    @Test func twelveOverThreeNodesIsFourEach() {
        let share = ClusterShare(members: Self.members([7: 0, 3: 0, 5: 0]), allowance: 12)
        #expect([3, 5, 7].map { share.fair(for: $0) } == [4, 4, 4])
        // The remainder goes to the lowest ids; more nodes than the cap: some get none.
        #expect([3, 5, 7].map { ClusterShare(members: share.members, allowance: 13).fair(for: $0) } == [5, 4, 4])
        #expect([3, 5, 7].map { ClusterShare(members: share.members, allowance: 2).fair(for: $0) } == [1, 1, 0])
        #expect(share.fair(for: 9) == 0, "not a member")
        #expect(ClusterShare.rate(30, for: 4, of: 12) == 10)
        #expect(ClusterShare.rate(30, for: 0, of: 12) == 0)
        #expect(ClusterShare.rate(30, for: 4, of: 0) == 0)
    }

    /// A newcomer takes what is free at once, and nothing the others still hold.
    @Test func aNewcomerGrowsIntoWhatTheOthersReleased() {
        // Two nodes hold 8 each of 16; node 3 joins.
        let joined = ClusterShare(members: Self.members([1: 8, 2: 8, 3: 0]), allowance: 16)
        #expect(joined.decide(for: 3) == .keep(0), "nothing is free yet")
        #expect(joined.decide(for: 1) == .shrink(6))
        #expect(joined.decide(for: 2) == .shrink(5))
        // Node 1 published its shrink: node 3 takes the two it released, not more.
        let one = ClusterShare(members: Self.members([1: 6, 2: 8, 3: 0]), allowance: 16)
        #expect(one.decide(for: 3) == .grow(2))
        let both = ClusterShare(members: Self.members([1: 6, 2: 5, 3: 2]), allowance: 16)
        #expect(both.decide(for: 3) == .grow(5))
        // A node alone takes everything at once.
        #expect(ClusterShare(members: Self.members([4: 0]), allowance: 16).decide(for: 4) == .grow(16))
        // A node that left: the others grow into its part.
        #expect(ClusterShare(members: Self.members([1: 6, 3: 5]), allowance: 16).decide(for: 1) == .grow(8))
    }

    /// Nodes joining and leaving at random, each acting at random moments as a node does (a
    /// decision under the lock; a shrink applied at once and published only once its transfers
    /// drained): what the nodes use never exceeds the allowance, and once they stop changing,
    /// every node ends at its fair part.
    @Test(arguments: 0..<40)
    func randomHandoversNeverExceedTheAllowanceAndSettleFair(seed: Int) {
        var random = SeededSequence(seed: UInt64(seed))
        let allowance = Int(random.next() % 40)
        var published: [Int64: Int] = [:]
        /// What each node may be using: its transfers drain towards its part after a shrink.
        var using: [Int64: Int] = [:]
        var parts: [Int64: Int] = [:]
        var nextID: Int64 = 1
        func act(_ node: Int64) {
            let share = ClusterShare(members: Self.members(published), allowance: allowance)
            switch share.decide(for: node) {
            case .grow(let part):
                published[node] = part
                parts[node] = part
                using[node] = part
            case .shrink(let part), .keep(let part):
                parts[node] = part
            }
        }
        func drain(_ node: Int64) {
            guard let part = parts[node], let used = using[node], used > part else { return }
            using[node] = part
            published[node] = part
        }
        for step in 0..<400 {
            let choice = random.next() % 10
            if step < 300, choice == 0 || published.isEmpty {
                published[nextID] = 0
                parts[nextID] = 0
                using[nextID] = 0
                nextID += 1
            } else if step < 300, choice == 1, published.count > 1 {
                // Leaves (stopped or expired; a dead node stopped its transfers first).
                let node = published.keys.sorted()[Int(random.next() % UInt64(published.count))]
                published[node] = nil
                parts[node] = nil
                using[node] = nil
            } else {
                let node = published.keys.sorted()[Int(random.next() % UInt64(published.count))]
                if choice < 6 { act(node) } else { drain(node) }
            }
            #expect(using.values.reduce(0, +) <= allowance, "seed \(seed), step \(step): \(using)")
            #expect(published.values.reduce(0, +) <= allowance)
        }
        for _ in 0..<3 {
            for node in published.keys.sorted() {
                act(node)
                drain(node)
            }
        }
        let share = ClusterShare(members: Self.members(published), allowance: allowance)
        for node in published.keys { #expect(published[node] == share.fair(for: node), "seed \(seed): \(published)") }
        #expect(published.values.reduce(0, +) == allowance)
    }

    @Test func leaseTimingRenewsBeforeFencingBeforeExpiry() {
        let timing = LeaseTiming(lease: 30)
        #expect(timing.heartbeatInterval == 1, "every second, whatever the lease")
        #expect(LeaseTiming(lease: 2).heartbeatInterval == 0.5, "and four times per lease")
        #expect(timing.fencingDelay == 15)
        for lease in [1.0, 2, 4, 30, 300] {
            let timing = LeaseTiming(lease: lease)
            #expect(2 * timing.heartbeatInterval <= timing.fencingDelay && timing.fencingDelay < timing.lease,
                    "a renewal may fail once before the node fences itself")
        }
        #expect(!timing.isFenced(sinceRenewal: 14.9))
        #expect(timing.isFenced(sinceRenewal: 15))
    }
}

/// A small deterministic generator (Knuth's MMIX LCG, high bits), so a failing seed fails again.
struct SeededSequence {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
}
