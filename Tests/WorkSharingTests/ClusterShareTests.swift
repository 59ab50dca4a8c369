import Testing
import WorkSharing

@Suite struct ClusterShareTests {
    static func members(_ ids: [Int64], age: Double = 100) -> [ClusterShare.Member] {
        ids.map { ClusterShare.Member(id: $0, age: age) }
    }

    /// Whatever the cap and the number of nodes, the shares add up to the cap exactly.
    @Test func sharesSumToTheAllowance() {
        for nodes in 1...7 {
            let ids = (0..<nodes).map { Int64(10 + $0 * 3) }
            let share = ClusterShare(members: Self.members(ids.shuffled()), settling: 5)
            for cap in 0...40 {
                let parts = ids.map { share.share(of: cap, for: $0) }
                #expect(parts.reduce(0, +) == cap, "cap \(cap) over \(nodes) nodes: \(parts)")
                #expect(parts.max()! - parts.min()! <= 1)
            }
        }
    }

    @Test func twelveOverThreeNodesIsFourEach() {
        let share = ClusterShare(members: Self.members([7, 3, 5]), settling: 5)
        #expect([3, 5, 7].map { share.share(of: 12, for: $0) } == [4, 4, 4])
        // The remainder goes to the lowest ids.
        #expect([3, 5, 7].map { share.share(of: 13, for: $0) } == [5, 4, 4])
        // More nodes than the cap: some get none rather than the sum exceeding it.
        #expect([3, 5, 7].map { share.share(of: 2, for: $0) } == [1, 1, 0])
        #expect(share.share(ofRate: 30, for: 5) == 10)
    }

    /// A node that just joined takes nothing until the others have had time to shrink; the
    /// others already count it, so during the switch the sum stays under the cap.
    @Test func aJoiningNodeWaitsWhileOthersShrink() {
        let before = ClusterShare(members: Self.members([1, 2]), settling: 15)
        #expect(before.share(of: 12, for: 1) + before.share(of: 12, for: 2) == 12)
        var joined = Self.members([1, 2])
        joined.append(ClusterShare.Member(id: 3, age: 4))
        let during = ClusterShare(members: joined, settling: 15)
        // Node 1 still uses its old share (not yet heartbeated), node 2 the new one, node 3 none.
        #expect(before.share(of: 12, for: 1) + during.share(of: 12, for: 2) + during.share(of: 12, for: 3) <= 12)
        #expect(during.share(of: 12, for: 3) == 0)
        #expect(during.share(ofRate: 12, for: 3) == 0)
        joined[2] = ClusterShare.Member(id: 3, age: 15)
        let settled = ClusterShare(members: joined, settling: 15)
        #expect([1, 2, 3].map { settled.share(of: 12, for: $0) } == [4, 4, 4])
    }

    @Test func aNonMemberHasNoShare() {
        let share = ClusterShare(members: Self.members([1, 2]), settling: 0)
        #expect(share.share(of: 12, for: 9) == 0)
        #expect(share.share(ofRate: 12, for: 9) == 0)
    }

    @Test func leaseTimingRenewsBeforeFencingBeforeExpiry() {
        let timing = LeaseTiming(lease: 30)
        #expect(timing.heartbeatInterval == 7.5)
        #expect(timing.fencingDelay == 15)
        #expect(2 * timing.heartbeatInterval <= timing.fencingDelay && timing.fencingDelay < timing.lease,
                "a renewal may fail once before the node fences itself")
        #expect(!timing.isFenced(sinceRenewal: 14.9))
        #expect(timing.isFenced(sinceRenewal: 15))
        #expect(timing.settling(transferAllowance: 5) == 12.5)
    }
}
