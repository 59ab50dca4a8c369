import Fetch
import Foundation
import Jobs
import Loop
import Packs
import Postgres
import PostgresStore
import WorkSharing

/// Runs packs in cluster mode (`PackScheduling`): several `packd serve` processes on one
/// PostgreSQL share each active pack's work. Three parts, wired here:
/// - `LeaseKeeper`: the heartbeat, every second, renewing this node's unit leases, and fencing
///   (no renewal for half a lease: stop everything, long before another node may claim);
/// - `ShareKeeper`: this node's part of the cluster's per-host allowances, moved without the
///   cluster ever standing idle when nodes join or leave (`ClusterShare`);
/// - `ActivePacks` and `UnitRunner`: activation, planning and cutting, then claims cut to the
///   pack and the cluster at claim time (`ClaimSizing`) and run with Jobs' engine.
/// Every node looks for work on each heartbeat and whenever another node commits something
/// (`otherNodeActed`, from `LISTEN`), so a pack created on any node starts at once. A unit's rows
/// and the pack's counters commit in one transaction (the store's batch, which also adds to the
/// unit's `stored_tiles`); the node finishing a pack's last unit finishes the pack in the same
/// transaction. Loop thread only.
public final class ClusterScheduler: PackScheduling, CommittedBatchListener, ClusterActivityListener {
    public struct Settings: Sendable {
        /// Packs active at once in the whole cluster.
        public var maxActivePacks: Int
        /// Units of one pack this node works on at once.
        public var unitsPerPack: Int
        public var timing: LeaseTiming
        /// The largest unit (`--cluster-unit-tiles`): the cut's size, and the largest claim.
        public var unitTiles: Int
        /// The smallest part a claim splits off (`ClaimSizing.floor`).
        public var claimFloor: Int
        public var download: DownloadSettings
        /// The cluster's per-host transfer cap and request rate, shared between the live nodes.
        public var transfersPerHost: Int
        public var requestsPerSecondPerHost: Double?

        /// What a unit's download runs with: `download`, its bound on bodies held and not yet
        /// committed (`maxUncommittedBytes`) shared out between the units a node may run at once
        /// (`maxActivePacks` × `unitsPerPack`). So `download.maxUncommittedBytes` is the node's:
        /// with the bytes of its transfers in flight, all a `kill -9` of the node can throw away
        /// (its committed tiles stay, and whoever takes its units over skips them).
        public var unitDownload: DownloadSettings {
            var unit = download
            unit.maxUncommittedBytes = max(Self.minimumUnitUncommittedBytes,
                                           download.maxUncommittedBytes / (maxActivePacks * unitsPerPack))
            return unit
        }

        /// A unit's share never goes below this (a few large tiles).
        public static let minimumUnitUncommittedBytes = 256 << 10

        public init(maxActivePacks: Int = 2, unitsPerPack: Int = 2, timing: LeaseTiming = .standard,
                    unitTiles: Int = WorkUnitCut.defaultUnitTiles, claimFloor: Int = ClaimSizing.defaultFloor,
                    download: DownloadSettings = DownloadSettings(), transfersPerHost: Int = 16,
                    requestsPerSecondPerHost: Double? = nil) {
            self.maxActivePacks = max(1, maxActivePacks)
            self.unitsPerPack = max(1, unitsPerPack)
            self.timing = timing
            self.unitTiles = max(1, unitTiles)
            self.claimFloor = max(1, claimFloor)
            self.download = download
            self.transfersPerHost = max(1, transfersPerHost)
            self.requestsPerSecondPerHost = requestsPerSecondPerHost
        }
    }

    /// Hears committed transitions, progress and revalidation counts, and failed requests (the
    /// API's event publisher; given at `init`, held weakly, and handed to the parts that report).
    public private(set) weak var listener: (any PackActivityListener)?
    /// A coordination step failed (a claim, a heartbeat, …); it is tried again on the next one.
    public var onError: ((String, any Error) -> Void)?
    /// Something an operator may want to know: a unit lost to another node, the node fenced.
    public var onNotice: ((String) -> Void)?

    private let loop: EventLoop
    private let store: PostgresStore
    private let settings: Settings
    private let coordination: PostgresConnectionThread
    private let nodes: ClusterNodes
    private let leases: LeaseKeeper
    private let shares: ShareKeeper
    private let packs: ActivePacks
    private let runner: UnitRunner
    private var stopped = false

    /// Becomes `store`'s commit listener: each commit comes back here and goes on to `listener`.
    public init(loop: EventLoop, fetcher: Fetcher, store: PostgresStore, listener: any PackActivityListener, settings: Settings,
                clock: WallClock = .system) {
        self.loop = loop
        self.listener = listener
        self.store = store
        self.settings = settings
        let (url, lease) = (store.url, settings.timing.lease)
        coordination = PostgresConnectionThread(loop: loop, name: "packd-cluster") {
            let connection = try PostgresConnection(url: url, applicationName: "packd-cluster")
            try PostgresSchemaMigrator.use(connection)
            // Frozen mid-claim or mid-renewal, this node's locked units go back once a lease would
            // have run out, rather than stay hidden from every other claimer.
            try connection.endIdleTransactions(after: .milliseconds(Int(lease * 1000)))
            return connection
        }
        nodes = ClusterNodes(timing: settings.timing)
        let unitLeases = WorkUnitLeases(node: store.node, timing: settings.timing)
        leases = LeaseKeeper(loop: loop, coordination: coordination, fetcher: fetcher, nodes: nodes, leases: unitLeases)
        shares = ShareKeeper(loop: loop, coordination: coordination, fetcher: fetcher, nodes: nodes, node: store.node,
                             allowance: settings.transfersPerHost, rate: settings.requestsPerSecondPerHost)
        let owners = TransferOwners()
        packs = ActivePacks(loop: loop, fetcher: fetcher, store: store, listener: listener, coordination: coordination,
                            settings: settings, clock: clock, owners: owners)
        runner = UnitRunner(loop: loop, fetcher: fetcher, store: store, listener: listener, coordination: coordination,
                            leases: unitLeases, held: leases.held, packs: packs, settings: settings, clock: clock, owners: owners)
        wire()
        store.commitListener = self
    }

    private func wire() {
        let report: (String, any Error) -> Void = { [weak self] what, error in self?.onError?(what, error) }
        leases.onError = report
        shares.onError = report
        packs.onError = report
        runner.onError = report
        runner.onNotice = { [weak self] in self?.onNotice?($0) }
        packs.forgetUnit = { [unowned runner] in runner.forget($0) }
        packs.onReady = { [unowned runner] in runner.claim() }
        leases.onRenewed = { [weak self] live, lost in self?.renewed(live: live, lost: lost) }
        leases.onFenced = { [weak self] in self?.fenced() }
        shares.onChange = { [weak self] _ in self?.updateWorking() }
    }

    public var node: Int64 { store.node }

    /// Joins: heartbeats from now on.
    public func start() {
        leases.start()
    }

    /// Records the address this node serves on.
    public func listening(on address: String) {
        let (nodes, node) = (nodes, node)
        coordination.submit({ connection in
            try nodes.setListenAddress(address, node: node, on: connection)
        }, then: { [weak self] result in
            if case .failure(let error) = result { self?.onError?("recording the listen address", error) }
        })
    }

    /// Stops every job and gives this node's units and parts back (the node is marked stopped);
    /// the packs stay active for the other nodes (or this one's next start). Call before
    /// `fetcher.shutdown()`, then `finishShutdown()` once the loop is done.
    public func shutdown() {
        loop.assertInLoopThread()
        stopped = true
        leases.stop()
        shares.stop()
        updateWorking()
        runner.loseAll()
        packs.stopAll()
        let (nodes, node) = (nodes, node)
        coordination.submit({ connection in try nodes.stop(node: node, on: connection) }, then: { _ in })
    }

    /// Waits for the last coordination step (the release of the units) and closes its connection.
    public func finishShutdown() {
        coordination.stop()
    }

    /// `GET /v1/cluster`: the nodes and the units of active packs, read now in one snapshot.
    public func status(then: @escaping (Result<ClusterStatus, any Error>) -> Void) {
        let reader = ClusterStatusReader(timing: settings.timing)
        coordination.submit({ connection in try reader.read(on: connection) }, then: then)
    }

    // MARK: PackScheduling

    public func packQueued(_ packID: Int64) {
        packs.refresh()
    }

    public func packSuspended(_ packID: Int64) {
        packs.stopPack(packID)
        packs.refresh()
    }

    public func packRemoved(_ packID: Int64) {
        packSuspended(packID)
    }

    /// Another node committed something: look for work (and for packs that stopped being active).
    public func otherNodeActed() {
        packs.refreshSoon()
    }

    /// A node joined, left, or released part of the per-host allowances.
    public func sharesChanged() {
        shares.decide()
    }

    /// Forwards committed progress and fails the packs whose writes the store refused (see
    /// `PackScheduler.committed`).
    public func committed(_ outcome: BatchOutcome) {
        for (packID, progress) in outcome.progress.sorted(by: { $0.key < $1.key }) {
            listener?.progressCommitted(packID, progress, expected: packs.packs[packID]?.expected)
        }
        for packID in outcome.tileLimitExceeded.sorted() {
            packs.fail(packID, PackError(.tileLimitExceeded, "the server's tile limit is reached"))
        }
        if let error = outcome.error {
            let failure = error.isStorageFull
                ? PackError(.storageFull, "the database is full")
                : PackError(.storageError, "storing resources failed: \(error)")
            for packID in outcome.failedPackIDs.sorted() { packs.fail(packID, failure) }
        }
    }

    // MARK: Heartbeat, fence, parts

    private func renewed(live: [ClusterNodes.Node], lost: Set<WorkUnitLeases.Key>) {
        runner.liveNodes = live.count
        for key in lost {
            onNotice?("unit \(key.ordinal) of pack \(key.pack) was taken over by another node")
            runner.lose(key)
        }
        shares.unfence()
        updateWorking()
        packs.refresh()
    }

    private func fenced() {
        onNotice?("no lease renewal for \(settings.timing.fencingDelay)s: this node stops its units until it renews again")
        shares.fence()
        updateWorking()
        runner.loseAll()
    }

    /// Work goes on while the node renews its leases, holds a part of the per-host allowances
    /// and is not shutting down.
    private func updateWorking() {
        let working = !stopped && !leases.fenced && shares.part > 0
        packs.working = !stopped && !leases.fenced
        guard working != runner.working else { return }
        runner.working = working
        if working {
            packs.refresh()
            runner.claim()
        }
    }
}
