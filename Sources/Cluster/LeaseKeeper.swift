import Fetch
import Foundation
import Loop
import Postgres
import PostgresStore
import WorkSharing

/// Keeps this node in the cluster: a heartbeat every `timing.heartbeatInterval` that records its
/// transfers in flight and renews the leases of the units it holds (`held`), in one
/// transaction; and fencing: when no renewal has succeeded for `timing.fencingDelay` (half a
/// lease, long before the database lets another node claim the units), the node must stop
/// working on them. Loop thread only.
final class LeaseKeeper {
    /// A renewal succeeded: the live nodes, and the held units another node took over.
    var onRenewed: ((_ live: [ClusterNodes.Node], _ lost: Set<WorkUnitLeases.Key>) -> Void)?
    /// Too long without a renewal, or no longer registered: stop every unit and every transfer.
    var onFenced: (() -> Void)?
    var onError: ((String, any Error) -> Void)?

    /// The units this node holds, shared with the claims on the coordination thread.
    let held = HeldUnits()
    /// Whether the node must not work (no renewal yet, or none for too long).
    private(set) var fenced = true

    private let loop: EventLoop
    private let coordination: PostgresConnectionThread
    private let fetcher: Fetcher
    private let nodes: ClusterNodes
    private let leases: WorkUnitLeases
    private let timer: LoopTimer
    private var beating = false
    private var lastRenewal: ContinuousClock.Instant?
    private var beats = 0
    private var stopped = false

    /// Every this many heartbeats, nodes gone for a day and holding nothing are deleted.
    static let forgetEvery = 600
    static let forgetAfter: Double = 86_400

    init(loop: EventLoop, coordination: PostgresConnectionThread, fetcher: Fetcher, nodes: ClusterNodes, leases: WorkUnitLeases) {
        self.loop = loop
        self.coordination = coordination
        self.fetcher = fetcher
        self.nodes = nodes
        self.leases = leases
        timer = LoopTimer(loop: loop)
    }

    private var timing: LeaseTiming { nodes.timing }

    /// Heartbeats from now on; checks the fence twice per heartbeat interval.
    func start() {
        loop.assertInLoopThread()
        let interval = UInt64(timing.heartbeatInterval * 1000)
        timer.start(after: 0, repeat: max(10, interval / 2)) { [weak self] in self?.tick() }
    }

    func stop() {
        loop.assertInLoopThread()
        stopped = true
        timer.close()
    }

    private func tick() {
        checkFence()
        guard !stopped, !beating else { return }
        if let lastRenewal, ContinuousClock.now - lastRenewal < .milliseconds(Int(timing.heartbeatInterval * 1000)) {
            return
        }
        beating = true
        beats += 1
        let (nodes, leases, held, node) = (nodes, leases, held, leases.node)
        let transfers = fetcher.runningCount
        let forget = beats % Self.forgetEvery == 1
        let started = ContinuousClock.now
        coordination.submit({ connection -> (live: [ClusterNodes.Node], registered: Bool, lost: Set<WorkUnitLeases.Key>) in
            let keys = held.keys
            let beat = try connection.transaction { () -> (registered: Bool, live: [ClusterNodes.Node], kept: Set<WorkUnitLeases.Key>) in
                let beat = try nodes.heartbeat(node: node, transfersInFlight: transfers, on: connection)
                return (beat.stillRegistered, beat.live, try leases.renew(keys, on: connection))
            }
            if forget { try nodes.forget(olderThan: Self.forgetAfter, on: connection) }
            return (beat.live, beat.registered, keys.subtracting(beat.kept))
        }, then: { [weak self] result in
            guard let self else { return }
            beating = false
            guard !stopped else { return }
            switch result {
            case .failure(let error):
                onError?("heartbeat", error)
                checkFence()
            case .success(let beat):
                guard beat.registered else {
                    // Marked stopped or forgotten (silent far longer than a lease): this node's
                    // work is the others' now.
                    onError?("heartbeat", ClusterError.noLongerRegistered)
                    return fence()
                }
                lastRenewal = started
                fenced = false
                onRenewed?(beat.live, beat.lost)
            }
        })
    }

    /// Too long without a renewal: the leases may be claimable by others soon, so stop first.
    private func checkFence() {
        guard !fenced, let lastRenewal else { return }
        let since = ContinuousClock.now - lastRenewal
        let seconds = Double(since.components.seconds) + Double(since.components.attoseconds) / 1e18
        if timing.isFenced(sinceRenewal: seconds) { fence() }
    }

    private func fence() {
        fenced = true
        onFenced?()
    }
}

public enum ClusterError: Error, CustomStringConvertible {
    case noLongerRegistered

    public var description: String {
        switch self {
        case .noLongerRegistered: "this node is no longer in the node table (stopped, or silent too long)"
        }
    }
}

/// The units this node holds, as the coordination thread (claims, renewals) and the loop see
/// them. Thread-safe.
final class HeldUnits: @unchecked Sendable {
    private let lock = NSLock()
    private var set: Set<WorkUnitLeases.Key> = []

    var keys: Set<WorkUnitLeases.Key> { lock.withLock { set } }

    func insert(_ key: WorkUnitLeases.Key) {
        _ = lock.withLock { set.insert(key) }
    }

    func remove(_ key: WorkUnitLeases.Key) {
        _ = lock.withLock { set.remove(key) }
    }
}
