import Fetch
import Foundation
import Geo
import Loop
import Packs
import Plan
import WorkSharing

/// One pack's download, on the loop thread: the document phase (style, TileJSONs → the exact
/// expected counts), then the fixed resources, then the tiles zoom by zoom, band by band — what
/// the pack stored is skipped and what another pack or the ambient cache holds fresh is linked
/// (`StoredLookup`); at most `maxInFlight` transfers run (`UpstreamResolver` retries them), only
/// as fast as the pack's bandwidth cap allows (`BandwidthGate`) and the writer keeps up
/// (`WriteQueue`). The end is reported only once the writer committed what it holds.
///
/// In cluster mode a pack's work is shared between nodes: one download only plans it (`.plan`),
/// others each take one work unit (`.unit`): the same engine, restricted to the unit's fixed
/// resources or tiles.
///
/// Tiles of a PMTiles archive are read with coalesced range requests (`ArchiveTileFetch`, see
/// `PackDownload+Archive`): through the same resolver, fetcher, bandwidth gate and writer, each
/// request one unit of `busy`. An archive replaced while it is read restarts the download from its
/// new header; tiles stored from the old one are fetched again (`TileVersion`).
public final class PackDownload: GlyphChoosingJob {
    /// What a download covers.
    public enum Scope: Sendable {
        /// The whole pack: documents, the plan's counts, every resource and tile.
        case pack
        /// Only the documents: the counts are reported (`jobPlanKnown`), the plan handed to the
        /// owner (`jobPlanned`); nothing is downloaded.
        case plan
        /// One work unit of a pack whose plan and counts are stored: the documents are read
        /// again for the plan (unless the owner has it: `plan`), then only the unit's fixed
        /// resources or tiles are downloaded.
        case unit(WorkUnit.Scope)
    }

    public let packID: Int64
    public let scope: Scope
    /// Who the fetcher counts the download's transfers for: the pack id, or a token of the
    /// download's own when several downloads of one pack run on a node (units).
    public let transferOwner: UInt64
    let loop: EventLoop
    let fetcher: Fetcher
    let store: any PackStore
    let settings: DownloadSettings
    let clock: WallClock
    weak var owner: (any JobOwner)?
    weak var listener: (any PackActivityListener)?
    var resolver: UpstreamResolver
    var writes: WriteQueue
    private let bandwidth: BandwidthGate?
    /// The pack's own `max_tiles`: checked against the exact count before any tile is fetched.
    public let maxTiles: Int64?
    /// Where to download first (a whole pack's download only); the watch of its tiles, unless
    /// it was recorded whole before (a resume keeps the order, the event is not repeated).
    private let startArea: StartArea?
    var startAreaWatch: StartAreaWatch?
    /// The start area's record is being committed: tiles beyond it wait.
    var startAreaRecording = false
    private let watchdog: LoopTimer
    var documentPhase: DocumentPhase?
    /// Style and TileJSON answers, stored with the fixed resources instead of being fetched again.
    var documents: [String: FetchResponse] = [:]
    var lookup: StoredLookup?
    var pending = PendingResources()
    /// The plan's pyramids, which pending tiles point into.
    var pyramids: [TilePyramid] = []
    private var region: RegionDefinition
    /// A unit's plan as the owner already knows it (the document phase is then skipped, unless
    /// the plan reads a PMTiles archive: each unit opens the archive itself).
    private let knownPlan: ResourcePlan?
    /// Resources started and not yet resolved (in a transfer, waiting for a retry, or encoding);
    /// an archive's range request counts as one, each tile it brought as one while encoded.
    var busy = 0
    /// Tiles of the pack's PMTiles pyramids, when it has any; those beyond the start area wait
    /// here until it is settled (the fetch would store the ones the archive lacks at once).
    var archiveFetch: ArchiveTileFetch?
    var archiveBeyondStartArea: [(slot: Int, tiles: [TileID])] = []
    /// Archive range requests and bytes not yet added to the pack's counts.
    var archiveTraffic = (requests: Int64(0), bytes: Int64(0))
    /// The last archive answer's headers and the cache columns parsed from them.
    var lastArchiveCache: (headers: [String: String], cache: HTTPCacheHeaders)?
    /// Restarts from a replaced archive's header so far, and whether one is under way.
    var restarts = 0
    var restarting = false
    /// A cluster unit: the archives' versions the cluster agreed on (`agreeOnArchives`), those
    /// this unit saw replaced, and whether it is asking.
    public internal(set) var agreedArchives: [String: String] = [:]
    var replacedArchives: [String: String] = [:]
    var agreeing = false
    var disagreements = 0
    /// Known once the documents are in (before any fixed resource or tile is fetched).
    public internal(set) var expected: ExpectedCounts?
    /// Known with the plan (its budget depends on the expected count).
    var failures: FailureLedger?
    var downloading = false
    /// With `"glyphs": "region"`: the glyph ranges to choose once every tile is stored.
    var glyphSubset: GlyphSubset?
    /// Choosing them: the tiles are committed and being read.
    var glyphSelection: GlyphSelection?
    var geoJSONLabels: GeoJSONLabelScan?
    var choosingGlyphs = false
    /// Everything resolved; waiting for the writer to commit before reporting.
    private var finishing = false
    var ended = false

    public init(packID: Int64, region: RegionDefinition, limits: PackLimits, loop: EventLoop, fetcher: Fetcher,
                store: any PackStore, settings: DownloadSettings, clock: WallClock, owner: any JobOwner,
                listener: (any PackActivityListener)?, scope: Scope = .pack, transferOwner: UInt64? = nil,
                startArea: StartArea? = nil, startAreaRecorded: Bool = false, plan: ResourcePlan? = nil) {
        self.packID = packID
        self.scope = scope
        if case .unit = scope { knownPlan = plan } else { knownPlan = nil }
        self.transferOwner = transferOwner ?? UInt64(bitPattern: packID)
        self.region = region
        self.loop = loop
        self.fetcher = fetcher
        self.store = store
        self.settings = settings
        self.clock = clock
        self.owner = owner
        self.listener = listener
        maxTiles = limits.maxTiles
        if case .pack = scope { self.startArea = startArea } else { self.startArea = nil }
        if self.startArea != nil, !startAreaRecorded { startAreaWatch = StartAreaWatch() }
        resolver = UpstreamResolver(loop: loop, fetcher: fetcher, settings: settings, policy: .download(settings),
                                    packID: packID, clock: clock, listener: listener)
        writes = WriteQueue(packID: packID, loop: loop, sink: store, settings: settings, clock: clock)
        bandwidth = limits.maxBytesPerSecond.flatMap { $0 >= 1 ? $0 : nil }.map { BandwidthGate(bytesPerSecond: $0, loop: loop) }
        watchdog = LoopTimer(loop: loop)
        connectRun()
    }

    /// Points the run's resolver and write queue (new ones after a restart) back at the download.
    func connectRun() {
        resolver.onAnswer = { [weak self] bytes in self?.bandwidth?.received(bytes) }
        writes.onProgress = { [weak self] in self?.pump() }
    }

    /// The documents (or straight the tiles, for a template region).
    public func start() {
        let interval = LoopTimer.milliseconds(settings.watchdogInterval)
        watchdog.start(after: interval, repeat: interval) { [weak self] in self?.checkProgressing() }
        run()
    }

    /// One run: the documents, then the resources. Again after an archive was replaced.
    func run() {
        if case .pack = scope {
            // This run retries every missing resource: failures an interrupted run recorded
            // (before a restart) no longer hold, and would leave a complete pack counting failed
            // resources. (A unit's run must not: the pack's other units recorded theirs.)
            let packID = packID
            store.inBatch({ database in try database.clearFailures(packID: packID) }, then: nil)
        }
        let ranges = archiveRanges()
        if let knownPlan, !knownPlan.pyramids.contains(where: { PMTilesSourceURL.key(ofTemplate: $0.template.template) != nil }) {
            return beginResources(knownPlan, archives: [:], ranges: ranges)
        }
        let source = ArchiveDocuments(inner: self, loop: loop, ranges: ranges, limits: settings.archive)
        let phase = DocumentPhase(region: region, loop: loop, source: source, limits: .init(
            maxDocumentBytes: settings.maxBodyBytes, maxTotalBytes: PlanLimits().maxDocumentBytes * 8,
            concurrency: settings.maxInFlight))
        documentPhase = phase
        phase.run { [weak self] result in
            guard let self, !ended else { return }
            documentPhase = nil
            flushArchiveTraffic()
            switch result {
            case .success(let builder): beginResources(builder.plan, archives: source.opened, ranges: ranges)
            case .failure(let failure): end(.fail(Self.packError(failure)))
            }
        }
    }

    /// Cancels every transfer and retry; the pack's state is the caller's business.
    public func stop() {
        guard !ended else { return }
        ended = true
        // The phase holds its source (this download) strongly until it ends, and a stopped phase
        // never ends: drop it here or the two keep each other, and the fetcher, store and loop
        // they hold, alive for good.
        documentPhase?.stop()
        documentPhase = nil
        glyphSelection?.stop()
        glyphSelection = nil
        geoJSONLabels?.stop()
        resolver.stop()
        lookup?.stop()
        archiveFetch?.stop()
        writes.stop()
        watchdog.close()
        bandwidth?.close()
        fetcher.cancelAll(owner: transferOwner)
        flushArchiveTraffic()
    }

    // MARK: Resources

    private func beginResources(_ documentsPlan: ResourcePlan, archives: [String: OpenedArchive], ranges: ResolverRanges) {
        // A whole pack's download chooses its glyph ranges once its tiles are stored. A cluster's
        // units each download positions of the fixed resources with every candidate range (the
        // pack's glyph-choice unit adds the needed ones as units: `PackGlyphChoice`); the plan and
        // the counts they report are the documents' own, which leave the ranges to the choice.
        let plan: ResourcePlan
        if case .unit = scope { plan = documentsPlan.withEveryGlyphRange } else { plan = documentsPlan }
        if case .pack = scope {
            glyphSubset = plan.glyphSubset
            geoJSONLabels = plan.glyphSubset.map { GeoJSONLabelScan(subset: $0, loop: loop) }
        }
        let counts = ExpectedCounts(resources: Int64(clamping: documentsPlan.expectedResources),
                                    tiles: Int64(clamping: documentsPlan.expectedTiles), precise: documentsPlan.isPrecise)
        expected = counts
        var unit: WorkUnit.Scope?
        switch scope {
        case .pack, .plan:
            // The owner stores the counts, also when they exceed the pack's limit (the pack then
            // says how many tiles it needs) — and has failed the pack then.
            guard owner?.jobPlanKnown(packID, counts) == true else { return stop() }
            if case .plan = scope {
                owner?.jobPlanned(packID, plan)
                return stop()
            }
        case .unit(let scope):
            unit = scope
            owner?.jobPlanned(packID, documentsPlan)
        }
        pyramids = plan.pyramids
        failures = FailureLedger(packID: packID, store: store,
                                 budget: settings.failureBudget(expectedResources: Int(clamping: counts.resources)))
        let versions: [Int: TileVersion]
        do {
            versions = try readArchives(plan.pyramids, opened: archives, ranges: ranges)
        } catch {
            return end(.fail(error.packError))
        }
        guard case .unit = scope, !versions.isEmpty else { return beginLookups(plan, unit: unit, versions: versions) }
        // A cluster's unit reads an archive only once every node agrees which one.
        if let knownPlan, knownPlan.pyramids != documentsPlan.pyramids {
            return end(.fail(PackError(.sourceUnavailable, "the archive's new header changes the pack's tiles; resume plans "
                                       + "the pack again")))
        }
        agreeOnArchives(archives) { [weak self] in self?.beginLookups(plan, unit: unit, versions: versions) }
    }

    /// The stored rows are looked up, band by band, and what is missing fetched.
    private func beginLookups(_ plan: ResourcePlan, unit: WorkUnit.Scope?, versions: [Int: TileVersion]) {
        let order = startAreaWatch.flatMap { _ in startArea.map { TileOrder(pyramids: plan.pyramids, startArea: $0) } }
            ?? TileOrder(pyramids: plan.pyramids, scope: unit)
        let lookup = StoredLookup(loop: loop, packID: packID, store: store, clock: clock, pyramids: plan.pyramids,
                                  bandTiles: settings.lookupBatchTiles, order: order, versions: versions)
        startAreaWatch?.onWhole = { [weak self] in self?.startAreaWhole() }
        startAreaWatch?.onSettled = { [weak self] in self?.pump() }
        lookup.onLinked = { [weak self] progress in
            guard let self, !ended else { return }
            owner?.jobLinked(packID, progress)
        }
        self.lookup = lookup
        if let unit, unit.pyramid != nil {
            // A unit of tiles: the pack's fixed resources are another unit's.
            downloading = true
            return pump()
        }
        // The whole pack's fixed resources, or a unit's share of them.
        let fixed = unit.map { Array(plan.fixed[$0.fixedPositions(count: plan.fixed.count)]) } ?? plan.fixed
        lookup.fixed(fixed, refetch: Set(documents.keys)) { [weak self] toFetch in
            guard let self, !ended else { return }
            pending.append(contentsOf: toFetch.map(PendingResources.Entry.fixed))
            downloading = true
            pump()
        }
    }

    func pump() {
        guard !ended, downloading, let lookup else { return }
        // Nothing beyond the start area starts before it is settled (its tiles commit first).
        let holding = startAreaWatch.map { !$0.isSettled || startAreaRecording } ?? false
        if !holding { releaseArchiveTiles() }
        while busy - writes.encoding < settings.maxInFlight, !writes.isFull {
            let archiveReady = archiveFetch?.canStart == true
            guard archiveReady || !pending.isEmpty else { break }
            if holding, !archiveReady, pending.first?.isTileOutsideStartArea == true { break }
            guard bandwidth?.allowsStart(ready: { [weak self] in self?.pump() }) ?? true else { break }
            // An archive's request first: a range holds many tiles, a leaf holds up whole bands.
            if archiveReady, archiveFetch?.startNext() == true {
                busy += 1
                continue
            }
            switch pending.popFirst() {
            case .fixed(let resource): download(resource)
            case .tile(let pyramid, let tile, let inStartArea):
                download(pyramids[pyramid].resource(for: tile), inStartArea: inStartArea && startAreaWatch != nil)
            case nil: break
            }
        }
        // Look the next band up while half a band is still pending, so transfers do not wait for it.
        let queued = pending.count + (archiveFetch?.pendingTiles ?? 0) + archiveBeyondStartArea.reduce(0) { $0 + $1.tiles.count }
        if queued < max(settings.maxInFlight, settings.lookupBatchTiles / 2), !lookup.lookingUp, !lookup.exhausted {
            let started = lookup.nextBand(deliver: { [weak self] tiles in
                guard let self, !ended else { return }
                if let watch = startAreaWatch { watch.tilesQueued(tiles.filter(\.inStartArea).count) }
                queue(tiles)
                pump()
            }, done: { [weak self, inStartArea = lookup.lookingUpStartArea] in
                if inStartArea { self?.startAreaWatch?.bandSettled() }
                self?.pump()
            })
            if started { startAreaWatch?.bandStarted(inStartArea: lookup.lookingUpStartArea) } else { startAreaWatch?.walkEnded() }
        }
        if busy == 0, pending.isEmpty, lookup.exhausted, !lookup.lookingUp, archiveFetch?.isIdle ?? true, archiveBeyondStartArea.isEmpty {
            if let subset = glyphSubset {
                glyphSubset = nil
                return chooseGlyphs(subset)
            }
            finish()
        }
    }

    private func download(_ resource: PlannedResource, inStartArea: Bool = false) {
        busy += 1
        if let document = documents.removeValue(forKey: resource.url) {
            return store(resource, document)
        }
        resolver.fetch(request(for: resource)) { [weak self] resolution in
            guard let self, !ended else { return }
            switch resolution {
            case .body(let response):
                store(resource, response, inStartArea: inStartArea)
                pump() // the transfer slot is free while the body is encoded
            case .noContent where resource.kind == .tile:
                writes.storeNoContent(resource)
                listener?.resourceDownloaded()
                if inStartArea { startAreaWatch?.tileResolved(stored: true) }
                resolved()
            case .noContent(let status):
                recordFailure(resource, status: status, message: "the upstream has no content here", attempts: 1)
            case .notModified(let response):
                recordFailure(resource, status: response.status, message: "HTTP \(response.status)", attempts: 1)
            case .unauthorized(let status):
                end(.fail(PackError(.upstreamUnauthorized, "the upstream refused the request", url: resource.url, status: status)))
            case .refused:
                end(.fail(Self.addressRefused(resource.url)))
            case .rangeRefused(let error):
                recordFailure(resource, status: nil, message: error.description, attempts: 1)
            case .failed(let status, let message, let attempts):
                if inStartArea { startAreaWatch?.tileResolved(stored: false) }
                recordFailure(resource, status: status, message: message, attempts: attempts)
            case .stopped:
                break
            }
        }
    }

    func store(_ resource: PlannedResource, _ response: FetchResponse, cache: HTTPCacheHeaders? = nil, inStartArea: Bool = false) {
        let geoJSONBody = geoJSONLabels?.awaits(resource.url) == true ? response.body : nil
        writes.store(resource, response, cache: cache) { [weak self] encoded in
            guard let self, !ended else { return }
            if inStartArea { startAreaWatch?.tileResolved(stored: encoded) }
            if encoded, let geoJSONBody { geoJSONLabels?.bodyStored(url: resource.url, body: geoJSONBody) }
            if encoded {
                listener?.resourceDownloaded()
                resolved()
            } else {
                recordFailure(resource, status: response.status, message: "the body could not be decoded", attempts: 1)
            }
        }
    }

    /// A resource that failed for good: recorded with the batch, and the pack stops early once
    /// more failed than the budget allows.
    func recordFailure(_ resource: PlannedResource, status: Int?, message: String, attempts: Int) {
        if failures?.record(url: resource.url, status: status, message: message, attempts: attempts, now: clock.now) == true {
            return end(.fail(PackError(.tooManyFailures, "\(failures?.count ?? 0) resources failed", url: resource.url,
                                       status: status)))
        }
        resolved()
    }

    func resolved() {
        busy -= 1
        pump()
    }

    /// Every tile of the start area is resolved and handed to the writer: the open batch is
    /// committed at once with the record that the area is whole (once: a resumed download whose
    /// start area was recorded has no watch), then the event, then the tiles beyond it may start —
    /// so the pack is usable around its start as soon as its own tiles are, not a batch later.
    private func startAreaWhole() {
        guard let startArea else { return }
        let (packID, now) = (packID, clock.now)
        startAreaRecording = true
        store.write({ database in try database.recordStartAreaReady(packID, at: now) }) { [weak self] result in
            guard let self, !ended else { return }
            startAreaRecording = false
            if case .success(true) = result { listener?.startAreaReady(packID, startArea, at: now) }
            pump()
        }
    }

    /// Everything is resolved: waits for the writer to commit it, then reports.
    private func finish() {
        downloading = false
        finishing = true
        let owned = LoopBound(self, loop: loop)
        store.flush {
            let download = owned.value
            guard !download.ended else { return }
            download.end(.finished(failedResources: download.failures?.count ?? 0))
        }
    }

    /// The watchdog: "never `active` with nothing in flight and nothing scheduled", checked. Every
    /// resource counted in `busy` must be a transfer in the fetcher, a pending retry or a body
    /// being encoded, and a download with nothing busy must be in its document phase, looking
    /// up, waiting for its bandwidth budget or for the writer to commit what it holds, or
    /// finishing. A lost completion would otherwise leave the pack `active` with nothing
    /// happening, for good; this fails it visibly instead, and `resume` continues it.
    private func checkProgressing() {
        guard !ended else { return }
        let accounted = fetcher.transferCount(owner: transferOwner) + resolver.retriesWaiting + writes.encoding
        let waiting = documentPhase != nil || lookup?.lookingUp == true || finishing || bandwidth?.isWaiting == true
            || writes.isFull || restarting || (archiveFetch?.poolJobs ?? 0) > 0 || choosingGlyphs || startAreaRecording || agreeing
        if busy > accounted || (busy == 0 && !waiting) {
            end(.fail(PackError(.internalError, "the download stalled with \(busy) resources under way, "
                                + "\(accounted) accounted for; resume continues it")))
        }
    }

    func end(_ event: PackLifecycle.Event) {
        guard !ended else { return }
        stop()
        owner?.jobEnded(packID, event)
    }

    func request(for resource: PlannedResource) -> FetchRequest {
        FetchRequest(url: resource.url, maxBodyBytes: settings.maxBodyBytes, timeouts: settings.timeouts,
                     owner: transferOwner)
    }
}
