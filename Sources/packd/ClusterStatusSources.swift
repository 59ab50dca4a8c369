import API
import Cluster
import Fetch
import Packs

/// `GET /v1/cluster` in SQLite mode: this process is the cluster's one node, holding no units.
final class SingleNodeStatus: ClusterStatusSource {
    private let fetcher: Fetcher
    private let listen: () -> String
    private let clock: WallClock
    private let started: Int64

    init(fetcher: Fetcher, listen: @escaping () -> String, clock: WallClock) {
        self.fetcher = fetcher
        self.listen = listen
        self.clock = clock
        started = clock.now
    }

    func clusterStatus(then: @escaping (Result<ClusterStatus, any Error>) -> Void) {
        let node = ClusterStatus.Node(id: 1, listen: listen(), version: BuildInfo.version, startedAt: Timestamp(started),
                                      lastHeartbeatAt: Timestamp(clock.now), unitsHeld: 0,
                                      transfersInFlight: fetcher.runningCount, transferShare: nil)
        then(.success(ClusterStatus(mode: .sqlite, nodes: [node], units: ClusterStatus.Units())))
    }
}

/// `GET /v1/cluster` in cluster mode: the node table and the units, read from the database in
/// one snapshot (`ClusterStatusReader`).
final class ClusterSchedulerStatus: ClusterStatusSource {
    private let scheduler: ClusterScheduler

    init(scheduler: ClusterScheduler) {
        self.scheduler = scheduler
    }

    func clusterStatus(then: @escaping (Result<ClusterStatus, any Error>) -> Void) {
        scheduler.status(then: then)
    }
}
