import Fetch
import Loop
import Postgres
import PostgresStore
import WorkSharing

/// This node's part of the cluster's per-host allowances (`--max-transfers-per-host` and
/// `--requests-per-second-per-host`), moved as `ClusterShare` says: decided under the shares
/// lock on every heartbeat and whenever another node joins, leaves or releases part of its
/// own (`ShareChannel`); a growth is published before the fetcher uses it, a shrink applied to
/// the fetcher at once and published once the fetcher's busiest host is down to it, so a
/// newcomer grows into room that is really free. Loop thread only.
final class ShareKeeper {
    /// The part in force on the fetcher changed.
    var onChange: ((Int) -> Void)?
    var onError: ((String, any Error) -> Void)?

    /// The part of the per-host transfer cap the fetcher uses now.
    private(set) var part = 0

    private let loop: EventLoop
    private let coordination: PostgresConnectionThread
    private let fetcher: Fetcher
    private let nodes: ClusterNodes
    private let node: Int64
    private let allowance: Int
    private let rate: Double?
    private let drainCheck: LoopTimer
    /// A smaller part applied and not yet published: published once the transfers are down to it.
    private var unpublished: Int?
    private var deciding = false
    private var decideAgain = false
    private var publishing = false
    private var fenced = true
    /// Back from a fence (or starting): the next decision publishes 0 first.
    private var rejoining = true

    /// How often a shrink looks whether the transfers above the new part finished.
    static let drainCheckInterval: UInt64 = 10

    init(loop: EventLoop, coordination: PostgresConnectionThread, fetcher: Fetcher, nodes: ClusterNodes, node: Int64,
         allowance: Int, rate: Double?) {
        self.loop = loop
        self.coordination = coordination
        self.fetcher = fetcher
        self.nodes = nodes
        self.node = node
        self.allowance = allowance
        self.rate = rate
        drainCheck = LoopTimer(loop: loop)
        // Nothing transfers until the node knows its part.
        fetcher.setHostShare(Fetcher.HostShare(transfersPerHost: 0))
    }

    /// The node renewed: it may hold a part again; decides it (after a fence, afresh: its old
    /// part may be others' by now).
    func unfence() {
        loop.assertInLoopThread()
        if fenced { rejoining = true }
        fenced = false
        decide()
    }

    /// Decides the part again (one decision at a time; asked meanwhile, once more after).
    func decide() {
        loop.assertInLoopThread()
        guard !fenced else { return }
        guard !deciding else {
            decideAgain = true
            return
        }
        deciding = true
        decideAgain = false
        let (nodes, node, allowance, afresh) = (nodes, node, allowance, rejoining)
        coordination.submit({ connection in
            try nodes.decideShare(node: node, allowance: allowance, afresh: afresh, on: connection)
        }, then: { [weak self] result in
            guard let self else { return }
            deciding = false
            switch result {
            case .failure(let error):
                onError?("deciding this node's part of the per-host allowances", error)
            case .success(let decision) where !fenced:
                if afresh { rejoining = false }
                if case .shrink(let smaller) = decision {
                    unpublished = smaller
                } else {
                    unpublished = nil
                }
                apply(decision.part)
                publishWhenDrained()
            case .success:
                break
            }
            if decideAgain { decide() }
        })
    }

    /// No renewal for too long: nothing more starts; what is published stays until the node
    /// renews and decides again (what others may take is never more than it published).
    func fence() {
        loop.assertInLoopThread()
        fenced = true
        unpublished = nil
        drainCheck.stop()
        apply(0)
    }

    func stop() {
        loop.assertInLoopThread()
        fenced = true
        drainCheck.close()
    }

    private func apply(_ newPart: Int) {
        let share = Fetcher.HostShare(transfersPerHost: newPart,
                                      requestsPerSecondPerHost: rate.map { ClusterShare.rate($0, for: newPart, of: allowance) })
        fetcher.setHostShare(share)
        guard newPart != part else { return }
        part = newPart
        onChange?(newPart)
    }

    /// Publishes an applied shrink once no host has more transfers running than the new part.
    private func publishWhenDrained() {
        guard let smaller = unpublished, !publishing else { return }
        guard fetcher.busiestHostTransfers <= smaller else {
            drainCheck.start(after: Self.drainCheckInterval) { [weak self] in self?.publishWhenDrained() }
            return
        }
        drainCheck.stop()
        publishing = true
        let (nodes, node) = (nodes, node)
        coordination.submit({ connection in
            try nodes.publishShare(node: node, part: smaller, on: connection)
        }, then: { [weak self] result in
            guard let self else { return }
            publishing = false
            if case .failure(let error) = result {
                // The next decision (the next heartbeat at the latest) shrinks and publishes again.
                onError?("publishing this node's smaller part", error)
                return
            }
            if unpublished == smaller {
                unpublished = nil
            } else {
                publishWhenDrained()  // shrunk again meanwhile
            }
        })
    }
}
