import Fetch
import Foundation
import Jobs
import Loop
import Packs
import Plan
import Postgres
import PostgresStore
import WorkSharing

/// Runs packs in cluster mode (`PackScheduling`): several `packd serve` processes on one
/// PostgreSQL share each active pack's work. Every node, on each heartbeat and whenever another
/// node commits something (`refresh`):
/// - activates the oldest queued packs while fewer than `maxActivePacks` are active cluster-wide
///   (`PackActivation`, under a lock: the limit is the cluster's);
/// - plans each active pack not cut into units yet (a `.plan` download: documents, the counts
///   through the lifecycle) and stores its cut (`WorkUnitCut`; nodes planning at once store one);
/// - claims units with `FOR UPDATE SKIP LOCKED` under a lease (`WorkUnitLeases`), at most
///   `unitsPerPack` per pack at a time, and downloads each with Jobs' own engine restricted to the
///   unit (`PackDownload.Scope.unit`), which skips what is stored and links what is stored fresh;
/// - renews its leases with its heartbeat, and stops working on units it lost (fenced when the
///   database could not be reached for `LeaseTiming.fencingDelay`, long before another node may
///   claim them); a dead node's units are claimed by the others once their lease expired.
/// A unit's rows and the pack's counters commit in one transaction (the store's batch, which
/// also adds to the unit's `stored_tiles`); the node finishing a pack's last unit finishes the
/// pack in the same transaction (`completeUnit`). Loop thread only.
public final class ClusterScheduler: PackScheduling, CommittedBatchListener, ClusterActivityListener {
    public struct Settings: Sendable {
        /// Packs active at once in the whole cluster.
        public var maxActivePacks: Int
        /// Units of one pack this node works on at once.
        public var unitsPerPack: Int
        public var timing: LeaseTiming
        public var unitTiles: Int
        public var download: DownloadSettings
        /// The cluster's per-host transfer cap and request rate, shared between the live nodes.
        public var transfersPerHost: Int
        public var requestsPerSecondPerHost: Double?

        public init(maxActivePacks: Int = 2, unitsPerPack: Int = 2, timing: LeaseTiming = .standard,
                    unitTiles: Int = WorkUnitCut.defaultUnitTiles, download: DownloadSettings = DownloadSettings(),
                    transfersPerHost: Int = 16, requestsPerSecondPerHost: Double? = nil) {
            self.maxActivePacks = max(1, maxActivePacks)
            self.unitsPerPack = max(1, unitsPerPack)
            self.timing = timing
            self.unitTiles = max(1, unitTiles)
            self.download = download
            self.transfersPerHost = max(1, transfersPerHost)
            self.requestsPerSecondPerHost = requestsPerSecondPerHost
        }
    }

    /// Hears committed transitions, progress and revalidation counts, and failed requests (the
    /// API's event publisher; given at `init`, held weakly).
    public private(set) weak var listener: (any PackActivityListener)?
    /// A coordination step failed (a claim, a heartbeat, …); it is tried again on the next one.
    public var onError: ((String, any Error) -> Void)?
    /// Something an operator may want to know: a unit lost to another node, the node fenced.
    public var onNotice: ((String) -> Void)?
    /// The live nodes, as of the last heartbeat (`GET /v1/cluster`).
    public private(set) var liveNodes: [ClusterNodes.Node] = []
    /// This node's share of the per-host transfer cap, as last computed.
    public private(set) var transfersPerHostShare = 0

    private let loop: EventLoop
    private let fetcher: Fetcher
    private let store: PostgresStore
    private let settings: Settings
    private let clock: WallClock
    private let coordination: PostgresConnectionThread
    private let leases: WorkUnitLeases
    private let nodes: ClusterNodes
    private let held = HeldUnits()
    private var packs: [Int64: ClusterPack] = [:]
    private let heartbeatTimer: LoopTimer
    private var heartbeating = false
    private var lastRenewal: ContinuousClock.Instant?
    private var fenced = true
    private var refreshing = false
    private var refreshAgain = false
    private var claiming = false
    private var stopped = false
    private var nextTransferOwner: UInt64 = 1 << 62

    /// Becomes `store`'s commit listener: each commit comes back here and goes on to `listener`.
    public init(loop: EventLoop, fetcher: Fetcher, store: PostgresStore, listener: any PackActivityListener, settings: Settings,
                clock: WallClock = .system) {
        self.loop = loop
        self.listener = listener
        self.fetcher = fetcher
        self.store = store
        self.settings = settings
        self.clock = clock
        let url = store.url
        coordination = PostgresConnectionThread(loop: loop, name: "packd-cluster") {
            let connection = try PostgresConnection(url: url, applicationName: "packd-cluster")
            try PostgresSchemaMigrator.use(connection)
            return connection
        }
        leases = WorkUnitLeases(node: store.node, timing: settings.timing)
        nodes = ClusterNodes(timing: settings.timing)
        heartbeatTimer = LoopTimer(loop: loop)
        // Nothing transfers until the node knows its share (first heartbeat).
        fetcher.setHostShare(Fetcher.HostShare(transfersPerHost: 0))
        store.commitListener = self
    }

    public var node: Int64 { store.node }

    /// Joins: heartbeats every `timing.heartbeatInterval` from now.
    public func start() {
        let interval = UInt64(settings.timing.heartbeatInterval * 1000)
        heartbeatTimer.start(after: 0, repeat: max(10, interval / 2)) { [weak self] in self?.tick() }
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

    /// Stops every job and gives this node's units back (the node is marked stopped); the packs
    /// stay active for the other nodes (or this one's next start). Call before `fetcher.shutdown()`,
    /// then `finishShutdown()` once the loop is done.
    public func shutdown() {
        stopped = true
        heartbeatTimer.close()
        for pack in packs.values { pack.stop() }
        packs.removeAll()
        let (nodes, node) = (nodes, node)
        coordination.submit({ connection in try nodes.stop(node: node, on: connection) }, then: { _ in })
    }

    /// Waits for the last coordination step (the release of the units) and closes its connection.
    public func finishShutdown() {
        coordination.stop()
    }

    /// `GET /v1/cluster`: the live nodes and the units of active packs by state, read now.
    public func status(then: @escaping (Result<ClusterStatus, any Error>) -> Void) {
        let nodes = nodes
        coordination.submit({ connection -> ClusterStatus in
            let live = try nodes.live(on: connection).map { node in
                ClusterStatus.Node(id: node.id, listen: node.listenAddress, version: node.version,
                                   startedAt: Timestamp(Int64(node.startedAt)), lastHeartbeatAt: Timestamp(Int64(node.heartbeatAt)),
                                   unitsHeld: node.unitsHeld, transfersInFlight: node.transfersInFlight)
            }
            return ClusterStatus(mode: .postgresql, nodes: live, units: try WorkUnitLeases.counts(on: connection))
        }, then: then)
    }

    // MARK: PackScheduling

    public func packQueued(_ packID: Int64) {
        refresh()
    }

    public func packSuspended(_ packID: Int64) {
        stopPack(packID)
        refresh()
    }

    public func packRemoved(_ packID: Int64) {
        packSuspended(packID)
    }

    /// Another node committed something: look for work (and for packs that stopped being active).
    public func otherNodeActed() {
        refresh()
    }

    /// Forwards committed progress and fails the packs whose writes the store refused (see
    /// `PackScheduler.committed`).
    public func committed(_ outcome: BatchOutcome) {
        for (packID, progress) in outcome.progress.sorted(by: { $0.key < $1.key }) {
            listener?.progressCommitted(packID, progress, expected: packs[packID]?.expected)
        }
        for packID in outcome.tileLimitExceeded.sorted() {
            fail(packID, PackError(.tileLimitExceeded, "the server's tile limit is reached"))
        }
        if let error = outcome.error {
            let failure = error.isStorageFull
                ? PackError(.storageFull, "the database is full")
                : PackError(.storageError, "storing resources failed: \(error)")
            for packID in outcome.failedPackIDs.sorted() { fail(packID, failure) }
        }
    }

    // MARK: Heartbeat and leases

    private func tick() {
        checkFence()
        guard !stopped, !heartbeating else { return }
        if let lastRenewal, ContinuousClock.now - lastRenewal < .milliseconds(Int(settings.timing.heartbeatInterval * 1000)) {
            return
        }
        heartbeating = true
        let (nodes, leases, node, held) = (nodes, leases, node, held)
        let transfers = fetcher.runningCount
        let started = ContinuousClock.now
        coordination.submit({ connection -> (live: [ClusterNodes.Node], registered: Bool, lost: Set<WorkUnitLeases.Key>) in
            let keys = held.keys
            let beat = try nodes.heartbeat(node: node, unitsHeld: keys.count, transfersInFlight: transfers, on: connection)
            let kept = try leases.renew(keys, on: connection)
            return (beat.live, beat.stillRegistered, keys.subtracting(kept))
        }, then: { [weak self] result in
            guard let self else { return }
            heartbeating = false
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
                liveNodes = beat.live
                applyShares()
                for key in beat.lost {
                    onNotice?("unit \(key.ordinal) of pack \(key.pack) was taken over by another node")
                    lose(key)
                }
                refresh()
            }
        })
    }

    /// Too long without a renewal: the leases may be claimable by others soon, so stop first.
    private func checkFence() {
        guard !fenced, let lastRenewal else { return }
        let since = ContinuousClock.now - lastRenewal
        let seconds = Double(since.components.seconds) + Double(since.components.attoseconds) / 1e18
        if settings.timing.isFenced(sinceRenewal: seconds) { fence() }
    }

    private func fence() {
        onNotice?("no lease renewal for \(settings.timing.fencingDelay)s: this node stops its units until it renews again")
        fenced = true
        transfersPerHostShare = 0
        fetcher.setHostShare(Fetcher.HostShare(transfersPerHost: 0))
        for pack in packs.values {
            for key in pack.units.values.map(\.key) { lose(key) }
        }
    }

    /// This node's part of the cluster's per-host allowances, from the live nodes.
    private func applyShares() {
        let share = nodes.share(among: liveNodes, transferAllowance: settings.timing.heartbeatInterval)
        transfersPerHostShare = share.share(of: settings.transfersPerHost, for: node)
        let rate = settings.requestsPerSecondPerHost.map { share.share(ofRate: $0, for: node) }
        fetcher.setHostShare(Fetcher.HostShare(transfersPerHost: transfersPerHostShare, requestsPerSecondPerHost: rate))
    }

    /// A unit this node no longer holds (another node took it over, or this node is fenced).
    private func lose(_ key: WorkUnitLeases.Key) {
        guard let job = packs[key.pack]?.units.removeValue(forKey: key.ordinal) else { return }
        job.stop()
        forget(key)
    }

    private func forget(_ key: WorkUnitLeases.Key) {
        held.remove(key)
        store.units.release(key)
    }

    // MARK: Finding work

    /// Activates packs, lists the active ones, plans and claims. One at a time; asked again
    /// meanwhile, it runs once more after.
    private func refresh() {
        guard !stopped, !fenced else { return }
        guard !refreshing else {
            refreshAgain = true
            return
        }
        refreshing = true
        refreshAgain = false
        let (limit, now) = (settings.maxActivePacks, clock.now)
        coordination.submit({ connection -> (activated: [Int64], active: [ActivePack]) in
            let activated = try PackActivation.activate(limit: limit, now: now, on: connection)
            let active = try connection.query("""
                SELECT p.region_id, p.work_unit_tiles IS NOT NULL, i.pack_id IS NOT NULL AND i.completed_at IS NULL
                FROM packd_packs p LEFT JOIN packd_invalidations i ON i.pack_id = p.region_id
                WHERE p.state = $1 ORDER BY p.region_id
                """, [.text(PackState.active.rawValue)]).map { row in
                ActivePack(id: try row.int64(0), isCut: try row.bool(1), revalidating: try row.bool(2))
            }
            return (activated, active)
        }, then: { [weak self] result in
            guard let self else { return }
            refreshing = false
            guard !stopped else { return }
            switch result {
            case .failure(let error):
                onError?("listing the active packs", error)
            case .success(let listing):
                listed(activated: listing.activated, active: listing.active)
            }
            if refreshAgain { refresh() }
        })
    }

    private struct ActivePack: Sendable {
        let id: Int64
        let isCut: Bool
        let revalidating: Bool
    }

    private func listed(activated: [Int64], active: [ActivePack]) {
        if case .success(let start) = PackLifecycle.transition(from: .queued, on: .start) {
            for id in activated { listener?.packTransitioned(id, start) }
        }
        let ids = Set(active.map(\.id))
        for id in packs.keys where !ids.contains(id) { stopPack(id) }
        for entry in active {
            let pack = packs[entry.id] ?? ClusterPack(id: entry.id)
            packs[entry.id] = pack
            pack.isCut = entry.isCut
            pack.revalidating = entry.revalidating
            guard pack.record != nil else {
                read(pack)
                continue
            }
            if !pack.isCut { cut(pack) }
        }
        claim()
    }

    private func read(_ pack: ClusterPack) {
        guard !pack.reading else { return }
        pack.reading = true
        let id = pack.id
        store.read({ reader in try reader.pack(id) }) { [weak self] result in
            guard let self, packs[id] === pack else { return }
            pack.reading = false
            switch result {
            case .failure(let error):
                onError?("reading pack \(id)", error)
            case .success(nil):
                stopPack(id)
            case .success(let record?):
                do {
                    pack.region = try RegionDefinition(stored: record.definition)
                } catch {
                    return fail(id, PackError(.invalidDocument, "the stored region definition is unreadable: \(error)"))
                }
                pack.record = record
                if record.expectedIsPrecise { pack.expected = record.expected }
                if !pack.isCut { cut(pack) }
                claim()
            }
        }
    }

    /// A pack not cut yet: a revalidation is one unit; a download is planned first.
    private func cut(_ pack: ClusterPack) {
        if pack.revalidating {
            return storeCut(WorkUnitCut(pyramids: []), of: pack.id)
        }
        guard pack.planner == nil, pack.units.isEmpty, let record = pack.record, let region = pack.region else { return }
        let job = PlanJob(scheduler: self)
        pack.planner = job
        let download = PackDownload(packID: pack.id, region: region, limits: record.limits, loop: loop, fetcher: fetcher,
                                    store: store, settings: settings.download, clock: clock, owner: job, listener: listener,
                                    scope: .plan, transferOwner: newTransferOwner())
        job.download = download
        download.start()
    }

    private func storeCut(_ cut: WorkUnitCut, of packID: Int64) {
        store.writeCluster({ connection in try connection.storeCut(cut, pack: packID) }) { [weak self] result in
            guard let self else { return }
            if case .failure(let error) = result { onError?("storing the units of pack \(packID)", error) }
            if case .success(true) = result { packs[packID]?.isCut = true }
            claim()
        }
    }

    /// Claims units for the packs with free unit slots, one claim at a time.
    private func claim() {
        guard !stopped, !fenced, !claiming, transfersPerHostShare > 0 else { return }
        let wanted = packs.values.filter { $0.isCut && $0.record != nil && $0.units.count < settings.unitsPerPack }
            .sorted { $0.id < $1.id }.map { ($0.id, settings.unitsPerPack - $0.units.count) }
        guard !wanted.isEmpty else { return }
        claiming = true
        let (leases, held) = (leases, held)
        coordination.submit({ connection -> [WorkUnitLeases.Claimed] in
            var claimed: [WorkUnitLeases.Claimed] = []
            for (pack, count) in wanted {
                let units = try leases.claim(packs: [pack], limit: count, on: connection)
                // Held from the claim on: a heartbeat running before the loop hears of it renews it.
                for unit in units { held.insert(WorkUnitLeases.Key(pack: unit.pack, ordinal: unit.unit.ordinal)) }
                claimed += units
            }
            return claimed
        }, then: { [weak self] result in
            guard let self else { return }
            claiming = false
            switch result {
            case .failure(let error):
                onError?("claiming units", error)
            case .success(let claimed):
                for unit in claimed { startUnit(unit) }
            }
        })
    }

    private func startUnit(_ claimed: WorkUnitLeases.Claimed) {
        let key = WorkUnitLeases.Key(pack: claimed.pack, ordinal: claimed.unit.ordinal)
        guard !stopped, !fenced, let pack = packs[claimed.pack], let record = pack.record, let region = pack.region,
              pack.units[key.ordinal] == nil else {
            // Not working on it: the next heartbeat gives it back.
            return held.remove(key)
        }
        let job = UnitJob(key: key, unit: claimed.unit, scheduler: self)
        if pack.revalidating {
            job.revalidation = PackRevalidation(packID: pack.id, region: region, expected: record.expected, loop: loop,
                                                fetcher: fetcher, store: store, settings: settings.download, clock: clock,
                                                owner: job, listener: listener)
        } else {
            job.download = PackDownload(packID: pack.id, region: region, limits: record.limits, loop: loop, fetcher: fetcher,
                                        store: store, settings: settings.download, clock: clock, owner: job,
                                        listener: listener, scope: .unit(claimed.unit.scope), transferOwner: newTransferOwner())
        }
        pack.units[key.ordinal] = job
        job.start()
    }

    private func newTransferOwner() -> UInt64 {
        nextTransferOwner += 1
        return nextTransferOwner
    }

    private func stopPack(_ packID: Int64) {
        guard let pack = packs.removeValue(forKey: packID) else { return }
        for key in pack.units.values.map(\.key) { forget(key) }
        pack.stop()
    }

    /// Fails the pack cluster-wide (the other nodes stop when they see it is no longer active).
    private func fail(_ packID: Int64, _ error: PackError) {
        stopPack(packID)
        transition(packID, .fail(error))
    }

    /// Applies `event` in the writer's open batch and, once committed, tells the listener.
    private func transition(_ packID: Int64, _ event: PackLifecycle.Event) {
        let now = clock.now
        let owned = LoopBound(self, loop: loop)
        store.inBatch({ database in try database.transition(packID, event, now: now) }) { result in
            guard case .success(.applied(let transition)) = result, transition.changesState else { return }
            owned.value.listener?.packTransitioned(packID, transition)
            owned.value.refresh()
        }
    }

    // MARK: What jobs report

    func planKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool {
        guard let pack = packs[packID] else { return false }
        pack.expected = counts
        let event = PackLifecycle.Event.planKnown(counts, maxTiles: pack.record?.maxTiles)
        transition(packID, event)
        // The lifecycle is pure: whether the event fails the pack is known now.
        guard case .success(let outcome) = PackLifecycle.transition(from: .active, on: event), outcome.to == .failed else {
            return true
        }
        stopPack(packID)
        return false
    }

    func planned(_ packID: Int64, _ plan: ResourcePlan) {
        guard let pack = packs[packID] else { return }
        pack.planner = nil
        storeCut(WorkUnitCut(pyramids: plan.pyramids, unitTiles: settings.unitTiles), of: packID)
    }

    func planEnded(_ packID: Int64, _ event: PackLifecycle.Event) {
        guard let pack = packs[packID] else { return }
        pack.planner = nil
        if case .fail(let error) = event { fail(packID, error) }
    }

    /// A unit's download knows its plan: the tiles it stores count for the unit from now on.
    func unitPlanned(_ key: WorkUnitLeases.Key, _ unit: WorkUnit, _ plan: ResourcePlan) {
        packs[key.pack]?.expected = ExpectedCounts(resources: Int64(clamping: plan.expectedResources),
                                                   tiles: Int64(clamping: plan.expectedTiles), precise: plan.isPrecise)
        guard let index = unit.scope.pyramid, index < plan.pyramids.count else { return }
        let pyramid = plan.pyramids[index]
        let template = pyramid.template.template
        let ratio = Int64(pyramid.template.storedPixelRatio(for: pyramid.pixelRatio))
        switch unit.scope {
        case .resources:
            break
        case .zooms(_, let zooms):
            store.units.hold(.init(key: key, urlTemplate: template, pixelRatio: ratio,
                                   zooms: Int64(zooms.lowerBound)...Int64(zooms.upperBound), rows: nil, columns: nil))
        case .window(_, let zoom, let rows, let columns):
            store.units.hold(.init(key: key, urlTemplate: template, pixelRatio: ratio, zooms: Int64(zoom)...Int64(zoom),
                                   rows: Int64(rows.lowerBound)...Int64(rows.upperBound),
                                   columns: Int64(columns.lowerBound)...Int64(columns.upperBound)))
        }
    }

    func linked(_ packID: Int64, _ progress: StoredProgress) {
        listener?.progressCommitted(packID, progress, expected: packs[packID]?.expected)
    }

    func counted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {
        guard let expected = packs[packID]?.record?.expected else { return }
        listener?.revalidationCommitted(packID, counts, progress: progress, expected: expected)
    }

    /// A unit's job ended once what it wrote is committed: finished (the unit is done, and the
    /// pack with its last unit) or failed (the pack fails cluster-wide).
    func unitEnded(_ key: WorkUnitLeases.Key, _ event: PackLifecycle.Event) {
        guard packs[key.pack]?.units.removeValue(forKey: key.ordinal) != nil else { return }
        switch event {
        case .finished:
            let (node, now) = (node, clock.now)
            store.writeCluster({ connection in try connection.completeUnit(key, node: node, now: now) }) { [weak self] result in
                guard let self else { return }
                forget(key)
                switch result {
                case .failure(let error):
                    // The unit stays leased: the next heartbeat gives it back, another claim redoes
                    // it (skipping what is stored).
                    onError?("completing unit \(key.ordinal) of pack \(key.pack)", error)
                case .success(.applied(let transition)?) where transition.changesState:
                    stopPack(key.pack)
                    listener?.packTransitioned(key.pack, transition)
                case .success:
                    break
                }
                refresh()
            }
        case .fail(let error):
            forget(key)
            fail(key.pack, error)
        default:
            forget(key)
        }
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
