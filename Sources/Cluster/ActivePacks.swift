import Fetch
import Foundation
import Jobs
import Loop
import Packs
import Plan
import Postgres
import PostgresStore
import WorkSharing

/// The packs active in the cluster, as this node takes part in them. On every `refresh` it
/// activates the oldest queued packs while fewer than `maxActivePacks` are active cluster-wide
/// (`PackActivation`, under a lock: the limit is the cluster's) and lists the active ones; for
/// each it reads the record, plans the pack on this node (a `.plan` download: the documents, and
/// the pyramids every claim of this node cuts by — the first planner also stores the counts
/// through the lifecycle) and stores its cut once (`WorkUnitCut`; nodes planning at once store
/// one). Packs that stopped being active are stopped here. Loop thread only.
final class ActivePacks {
    /// The scheduler's listener (the API's event publisher), held weakly.
    private(set) weak var listener: (any PackActivityListener)?
    var onError: ((String, any Error) -> Void)?
    /// A pack became claimable (cut, planned) or the list changed: look for units to claim.
    var onReady: (() -> Void)?
    /// A unit this node dropped with its pack: no longer held, no longer attributed.
    var forgetUnit: ((WorkUnitLeases.Key) -> Void)?
    /// False while the node must not work (fenced, stopped): `refresh` does nothing.
    var working = false

    private(set) var packs: [Int64: ClusterPack] = [:]

    private let loop: EventLoop
    private let fetcher: Fetcher
    private let store: PostgresStore
    private let coordination: PostgresConnectionThread
    private let settings: ClusterScheduler.Settings
    private let clock: WallClock
    private let owners: TransferOwners
    private let soon: LoopTimer
    private var refreshing = false
    private var refreshAgain = false
    private var lastRefresh: ContinuousClock.Instant?

    /// Refreshes another node's commits ask for come at most this often (a busy cluster commits
    /// many batches a second); the node's own reasons refresh at once.
    static let remoteRefreshInterval: Duration = .milliseconds(100)

    init(loop: EventLoop, fetcher: Fetcher, store: PostgresStore, listener: any PackActivityListener,
         coordination: PostgresConnectionThread, settings: ClusterScheduler.Settings, clock: WallClock, owners: TransferOwners) {
        self.loop = loop
        self.listener = listener
        self.fetcher = fetcher
        self.store = store
        self.coordination = coordination
        self.settings = settings
        self.clock = clock
        self.owners = owners
        soon = LoopTimer(loop: loop)
    }

    /// Activates, lists, reads, plans and cuts. One at a time; asked again meanwhile, it runs once
    /// more after.
    func refresh() {
        loop.assertInLoopThread()
        guard working else { return }
        soon.stop()
        guard !refreshing else {
            refreshAgain = true
            return
        }
        refreshing = true
        refreshAgain = false
        lastRefresh = .now
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
            guard working else { return }
            switch result {
            case .failure(let error):
                onError?("listing the active packs", error)
            case .success(let listing):
                listed(activated: listing.activated, active: listing.active)
            }
            if refreshAgain { refresh() }
        })
    }

    /// Another node committed something: a refresh, at most every `remoteRefreshInterval`.
    func refreshSoon() {
        loop.assertInLoopThread()
        guard working else { return }
        guard let lastRefresh else { return refresh() }
        let due = lastRefresh + Self.remoteRefreshInterval
        if ContinuousClock.now >= due || refreshing { return refresh() }
        soon.start(after: due - .now) { [weak self] in self?.refresh() }
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
            pack.isCut = pack.isCut || entry.isCut
            pack.revalidating = entry.revalidating
            // A `"glyphs": "region"` pack's counts become exact with its glyph choice, which any
            // node may make: read again until they are (progress is reported with them).
            if pack.record == nil || pack.plan?.glyphSubset != nil && pack.expected?.precise != true {
                read(pack)
            } else {
                prepare(pack)
            }
        }
        onReady?()
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
                prepare(pack)
                onReady?()
            }
        }
    }

    /// What a pack needs before this node claims its units: a revalidation only its one unit;
    /// a download this node's plan and the pack's cut.
    private func prepare(_ pack: ClusterPack) {
        if pack.revalidating {
            if !pack.isCut { storeCut(WorkUnitCut(pyramids: []), of: pack.id) }
            return
        }
        if let plan = pack.plan {
            if !pack.isCut {
                storeCut(WorkUnitCut(pyramids: plan.pyramids, unitTiles: settings.unitTiles,
                                     fixedBeforeGlyphChoice: plan.glyphSubset == nil ? nil : plan.fixed.count), of: pack.id)
            }
            return
        }
        guard pack.planner == nil, let record = pack.record, let region = pack.region else { return }
        let job = PlanJob(packs: self)
        pack.planner = job
        let download = PackDownload(packID: pack.id, region: region, limits: record.limits, loop: loop, fetcher: fetcher,
                                    store: store, settings: settings.download, clock: clock, owner: job, listener: listener,
                                    scope: .plan, transferOwner: owners.next())
        job.download = download
        download.start()
    }

    private func storeCut(_ cut: WorkUnitCut, of packID: Int64) {
        guard let pack = packs[packID], !pack.storingCut else { return }
        pack.storingCut = true
        store.writeCluster({ connection in try connection.storeCut(cut, pack: packID) }) { [weak self] result in
            guard let self else { return }
            pack.storingCut = false
            if case .failure(let error) = result { onError?("storing the units of pack \(packID)", error) }
            if case .success(true) = result { pack.isCut = true }
            onReady?()
        }
    }

    /// Stops everything this node runs for the pack and forgets it.
    func stopPack(_ packID: Int64) {
        guard let pack = packs.removeValue(forKey: packID) else { return }
        for key in pack.units.values.map(\.key) { forgetUnit?(key) }
        pack.stop()
    }

    /// Stops every pack (shutdown).
    func stopAll() {
        for id in Array(packs.keys) { stopPack(id) }
        soon.close()
    }

    /// Fails the pack cluster-wide (the other nodes stop when they see it is no longer active).
    func fail(_ packID: Int64, _ error: PackError) {
        stopPack(packID)
        transition(packID, .fail(error))
    }

    /// Applies `event` in the writer's open batch and, once committed, tells the listener.
    func transition(_ packID: Int64, _ event: PackLifecycle.Event) {
        let now = clock.now
        let owned = LoopBound(self, loop: loop)
        store.inBatch({ database in try database.transition(packID, event, now: now) }) { result in
            guard case .success(.applied(let transition)) = result, transition.changesState else { return }
            owned.value.listener?.packTransitioned(packID, transition)
            owned.value.refresh()
        }
    }

    // MARK: What planning reports

    /// The counts are stored by the first planner (the pack not cut yet); later planners only
    /// want the pyramids.
    func planKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool {
        guard let pack = packs[packID] else { return false }
        pack.expected = counts
        if pack.isCut { return true }
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
        pack.plan = plan
        pack.unitFixedResources = plan.withEveryGlyphRange.fixed.count
        prepare(pack)
        onReady?()
    }

    func planEnded(_ packID: Int64, _ event: PackLifecycle.Event) {
        guard let pack = packs[packID] else { return }
        pack.planner = nil
        if case .fail(let error) = event { fail(packID, error) }
    }
}
