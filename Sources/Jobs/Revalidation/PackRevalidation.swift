import Fetch
import Loop
import Packs
import Plan

/// One pack's `invalidate` (MapLibre's `invalidatePack`), on the loop thread: a `RevalidationRun`
/// asks every stored resource and tile again (see there), and when a PMTiles archive is replaced
/// while its tiles are read — it changed, the revalidation opened the new one, and it changed
/// again — the revalidation starts over from the new header, as a download does (at most
/// `ArchiveLimits.maxRestarts` times): the counts from zero, every row compared again, so the pack
/// ends with the newest archive's tiles only. What the stopped run submitted is committed first
/// (the writer keeps their order); the new run compares with it.
public final class PackRevalidation: JobOwner {
    public let packID: Int64
    private let loop: EventLoop
    private let store: any PackStore
    private let maxRestarts: Int
    private weak var owner: (any JobOwner)?
    /// A run of the revalidation, reporting to this job.
    private let makeRun: (PackRevalidation) -> RevalidationRun
    private let expectedAtStart: ExpectedCounts
    private var run: RevalidationRun?
    private var restarts = 0
    private var stopped = false

    /// The pack's expected counts as the current run holds them (grown by the glyph ranges a
    /// region-glyphs pack's refreshed tiles need).
    public var expected: ExpectedCounts { run?.expected ?? expectedAtStart }

    public init(packID: Int64, region: RegionDefinition, expected: ExpectedCounts, loop: EventLoop, fetcher: Fetcher,
                store: any PackStore, settings: DownloadSettings, clock: WallClock, owner: any JobOwner,
                listener: (any PackActivityListener)?) {
        self.packID = packID
        self.loop = loop
        self.store = store
        maxRestarts = settings.archive.maxRestarts
        self.owner = owner
        expectedAtStart = expected
        makeRun = { [weak listener] job in
            RevalidationRun(packID: packID, region: region, expected: expected, loop: loop, fetcher: fetcher, store: store,
                            settings: settings, clock: clock, owner: job, listener: listener)
        }
    }

    public func start() {
        loop.assertInLoopThread()
        guard !stopped else { return }
        let run = makeRun(self)
        run.onArchiveReplaced = { [weak self] error in self?.archiveReplaced(error) }
        self.run = run
        run.start()
    }

    /// Cancels every transfer and retry; the pack's state is the caller's business.
    public func stop() {
        stopped = true
        run?.stop()
    }

    /// The run stopped; once what it submitted is committed, another starts from the new header.
    private func archiveReplaced(_ error: PackError) {
        guard !stopped else { return }
        restarts += 1
        guard restarts <= maxRestarts else {
            stopped = true
            let failure = ArchiveFailure.unstable(url: error.url ?? "", detail: "the archive changed \(restarts) times during the "
                                                  + "revalidation: \(error.detail)")
            owner?.jobEnded(packID, .fail(failure.packError))
            return
        }
        let owned = LoopBound(self, loop: loop)
        store.flush { owned.value.start() }
    }

    // MARK: What the run reports, passed on

    public func jobPlanKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool {
        owner?.jobPlanKnown(packID, counts) ?? false
    }

    public func jobLinked(_ packID: Int64, _ progress: StoredProgress) {
        owner?.jobLinked(packID, progress)
    }

    public func jobCounted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {
        owner?.jobCounted(packID, counts, progress: progress)
    }

    public func jobEnded(_ packID: Int64, _ event: PackLifecycle.Event) {
        guard !stopped else { return }
        stopped = true
        owner?.jobEnded(packID, event)
    }
}
