import Fetch
import Jobs
import Loop
import Packs
import Plan
import Postgres
import PostgresStore
import WorkSharing

/// Claims this node's units of the active packs and runs them. A claim takes units pending or
/// whose lease expired, `FOR UPDATE SKIP LOCKED`, at most `unitsPerPack` of a pack at a time,
/// cutting a unit larger than the claim's part at claim time (`ClaimSizing`: the pack's
/// unclaimed tiles over the cluster's claim slots — so parts shrink as a pack drains and nodes
/// finish together). Each unit is downloaded with Jobs' own engine restricted to it
/// (`PackDownload.Scope.unit`, with this node's plan: no documents fetched again), which skips
/// what is stored and links what is stored fresh; a revalidation's one unit runs the whole
/// revalidation. The node finishing a pack's last unit finishes the pack in the same
/// transaction (`completeUnit`). Loop thread only.
final class UnitRunner {
    /// The scheduler's listener (the API's event publisher), held weakly.
    private(set) weak var listener: (any PackActivityListener)?
    var onError: ((String, any Error) -> Void)?
    var onNotice: ((String) -> Void)?
    /// False while the node must not work (fenced, no part of the per-host allowances, stopped).
    var working = false
    /// Live nodes in the cluster, as of the last heartbeat (claim slots: × `unitsPerPack`).
    var liveNodes = 1

    private let loop: EventLoop
    private let fetcher: Fetcher
    private let store: PostgresStore
    private let coordination: PostgresConnectionThread
    private let leases: WorkUnitLeases
    private let held: HeldUnits
    private let packs: ActivePacks
    private let settings: ClusterScheduler.Settings
    private let clock: WallClock
    private let owners: TransferOwners
    /// Finished units whose completion is being committed (still held meanwhile).
    private let closings: UnitClosings
    private var claiming = false
    private var claimAgain = false

    init(loop: EventLoop, fetcher: Fetcher, store: PostgresStore, listener: any PackActivityListener,
         coordination: PostgresConnectionThread, leases: WorkUnitLeases, held: HeldUnits, packs: ActivePacks,
         settings: ClusterScheduler.Settings, clock: WallClock, owners: TransferOwners) {
        self.loop = loop
        self.listener = listener
        self.fetcher = fetcher
        self.store = store
        self.coordination = coordination
        self.leases = leases
        self.held = held
        self.packs = packs
        self.settings = settings
        self.clock = clock
        self.owners = owners
        closings = UnitClosings(loop: loop, store: store)
        closings.onError = { [weak self] what, error in self?.onError?(what, error) }
    }

    /// Claims units for the packs with free unit slots, one claim round at a time (asked
    /// meanwhile, one more round after).
    func claim() {
        loop.assertInLoopThread()
        guard working else { return }
        guard !claiming else {
            claimAgain = true
            return
        }
        let slots = max(1, liveNodes) * settings.unitsPerPack
        let sizing = ClaimSizing(floor: settings.claimFloor, ceiling: settings.unitTiles)
        let wanted = packs.packs.values.filter { pack in
            pack.isCut && pack.record != nil && (pack.revalidating || pack.plan != nil) && pack.units.count < settings.unitsPerPack
        }.sorted { $0.id < $1.id }.map { pack in
            (pack.id, settings.unitsPerPack - pack.units.count,
             WorkUnitLeases.ClaimCut(pyramids: pack.plan?.pyramids ?? [], fixedResources: pack.unitFixedResources,
                                     sizing: sizing, slots: slots),
             // A start area: its nearest units first (a revalidation's one unit has no order).
             pack.revalidating ? nil : pack.record?.startArea.map {
                 StartAreaClaimOrder(longitude: $0.longitude, latitude: $0.latitude, radiusMetres: $0.radiusM)
             })
        }
        guard !wanted.isEmpty else { return }
        claiming = true
        claimAgain = false
        let (leases, held) = (leases, held)
        coordination.submit({ connection -> [WorkUnitLeases.Claimed] in
            var claimed: [WorkUnitLeases.Claimed] = []
            for (pack, count, cut, near) in wanted {
                let units = try leases.claim(pack: pack, limit: count, cut: cut, near: near, on: connection)
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
                for unit in claimed { start(unit) }
            }
            if claimAgain { claim() }
        })
    }

    private func start(_ claimed: WorkUnitLeases.Claimed) {
        let key = WorkUnitLeases.Key(pack: claimed.pack, ordinal: claimed.unit.ordinal)
        guard working, let pack = packs.packs[claimed.pack], let record = pack.record, let region = pack.region,
              pack.units[key.ordinal] == nil else {
            // Not working on it: the next heartbeat gives it back.
            return held.remove(key)
        }
        if claimed.claims > 1 {
            onNotice?("took over unit \(key.ordinal) of pack \(key.pack) (claimed \(claimed.claims) times)")
        }
        let job = UnitJob(key: key, unit: claimed.unit, runner: self)
        if case .glyphChoice = claimed.unit.scope, let plan = pack.plan {
            job.glyphChoice = PackGlyphChoice(packID: pack.id, plan: plan, loop: loop, store: store)
        } else if pack.revalidating {
            job.revalidation = PackRevalidation(packID: pack.id, region: region, expected: record.expected, loop: loop,
                                                fetcher: fetcher, store: store, settings: settings.unitDownload, clock: clock,
                                                owner: job, listener: listener)
        } else {
            job.download = PackDownload(packID: pack.id, region: region, limits: record.limits, loop: loop, fetcher: fetcher,
                                        store: store, settings: settings.unitDownload, clock: clock, owner: job,
                                        listener: listener, scope: .unit(claimed.unit.scope), transferOwner: owners.next(),
                                        plan: pack.plan)
        }
        pack.units[key.ordinal] = job
        job.start()
    }

    /// A unit this node no longer holds (another node took it over, or this node is fenced).
    func lose(_ key: WorkUnitLeases.Key) {
        loop.assertInLoopThread()
        let closing = closings.cancel(key)
        if let job = packs.packs[key.pack]?.units.removeValue(forKey: key.ordinal) {
            job.stop()
        } else if !closing {
            return
        }
        forget(key)
    }

    /// Every unit this node runs or is completing (fenced: the leases may go to other nodes soon;
    /// stopping).
    func loseAll() {
        for key in closings.cancelAll() { forget(key) }
        for pack in packs.packs.values {
            for key in pack.units.values.map(\.key) { lose(key) }
        }
    }

    /// No longer held: the heartbeat stops renewing it, the writer stops attributing tiles to it.
    func forget(_ key: WorkUnitLeases.Key) {
        held.remove(key)
        store.units.release(key)
    }

    // MARK: What units report

    /// A unit's download knows its plan: the tiles it stores count for the unit from now on.
    func unitPlanned(_ key: WorkUnitLeases.Key, _ unit: WorkUnit, _ plan: ResourcePlan) {
        if let pack = packs.packs[key.pack], pack.expected == nil {
            pack.expected = ExpectedCounts(resources: Int64(clamping: plan.expectedResources),
                                           tiles: Int64(clamping: plan.expectedTiles), precise: plan.isPrecise)
        }
        guard let index = unit.scope.pyramid, index < plan.pyramids.count else { return }
        let pyramid = plan.pyramids[index]
        let template = pyramid.template.template
        let ratio = Int64(pyramid.template.storedPixelRatio(for: pyramid.pixelRatio))
        switch unit.scope {
        case .resources, .fixed, .glyphChoice:
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

    /// A glyph choice was made from every tile the pack's units stored: its ranges become units,
    /// recorded with the exact counts as the unit completes (the pack finishes with it when no
    /// range is needed); a choice that cannot read the tiles fails the pack, as on one node.
    func glyphsChosen(_ key: WorkUnitLeases.Key, _ result: Result<PackGlyphChoice.Choice, PackError>) {
        guard let pack = packs.packs[key.pack], pack.units.removeValue(forKey: key.ordinal) != nil else { return }
        let choice: PackGlyphChoice.Choice
        switch result {
        case .failure(let error):
            forget(key)
            return packs.fail(key.pack, error)
        case .success(let chosen):
            choice = chosen
        }
        let (node, now, maxTiles) = (leases.node, clock.now, pack.record?.maxTiles)
        closings.close(key, what: "recording the glyph choice of pack \(key.pack)", { connection in
            try connection.completeGlyphChoice(key, node: node, ranges: choice.positions, counts: choice.counts, maxTiles: maxTiles,
                                               skipped: choice.skipped, now: now)
        }) { [weak self] outcome in
            guard let self else { return }
            forget(key)
            if let outcome {
                if outcome.chosen { packs.packs[key.pack]?.expected = choice.counts }
                if case .applied(let transition)? = outcome.finished, transition.changesState {
                    packs.stopPack(key.pack)
                    listener?.packTransitioned(key.pack, transition)
                }
            }
            claim()
            packs.refresh()
        }
    }

    /// A unit of an archive pack opened its archives: every node agrees on their versions before
    /// it stores a tile (`PostgresStoreConnection.agreeOnArchives`), asked until the database
    /// answers; a unit whose attempts ran out is given back.
    func agreeOnArchives(_ key: WorkUnitLeases.Key, _ identities: [String: String], replacing: [String: String],
                         then: @escaping ([String: String]?) -> Void) {
        closings.close(key, what: "agreeing on the archives of pack \(key.pack)", { connection in
            try connection.agreeOnArchives(pack: key.pack, versions: identities, replacing: replacing)
        }) { [weak self] recorded in
            guard let recorded else { self?.lose(key); return }
            then(recorded)
        }
    }

    func linked(_ packID: Int64, _ progress: StoredProgress) {
        listener?.progressCommitted(packID, progress, expected: packs.packs[packID]?.expected)
    }

    func counted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {
        guard let expected = packs.packs[packID]?.record?.expected else { return }
        listener?.revalidationCommitted(packID, counts, progress: progress, expected: expected)
    }

    /// A unit's job ended once what it wrote is committed: finished (the unit is done, and the
    /// pack with its last unit) or failed (the pack fails cluster-wide).
    func unitEnded(_ key: WorkUnitLeases.Key, _ event: PackLifecycle.Event) {
        guard let job = packs.packs[key.pack]?.units.removeValue(forKey: key.ordinal) else { return }
        switch event {
        case .finished:
            let (node, now, archives) = (leases.node, clock.now, job.download?.agreedArchives ?? [:])
            // A start area not yet whole: whether this unit was the last one near it.
            let record = packs.packs[key.pack]?.record
            let startArea = record?.startAreaReadyAt == nil ? record?.startArea : nil
            let near = startArea.map { StartAreaClaimOrder(longitude: $0.longitude, latitude: $0.latitude, radiusMetres: $0.radiusM) }
            closings.close(key, what: "completing unit \(key.ordinal) of pack \(key.pack)", { connection in
                let outcome = try connection.completeUnit(key, node: node, now: now, archives: archives)
                return (outcome, try near.map { try connection.recordStartAreaReadyIfNearUnitsDone(key.pack, near: $0, now: now) } ?? false)
            }) { [weak self] result in
                guard let self else { return }
                forget(key)
                if case (_, true)? = result, let startArea { listener?.startAreaReady(key.pack, startArea, at: now) }
                if case (.applied(let transition)?, _)? = result, transition.changesState {
                    packs.stopPack(key.pack)
                    listener?.packTransitioned(key.pack, transition)
                }
                claim()
                packs.refresh()
            }
        case .fail(let error):
            forget(key)
            packs.fail(key.pack, error)
        default:
            forget(key)
        }
    }
}
