import Fetch
import Foundation
import Loop
import Packs
import Plan

/// Runs queued packs, at most `maxActive` at a time, in creation order. The queue is the store:
/// `queued` and `active` packs are picked up again on `start()` after a restart (an `active` one
/// goes back to `queued` first, as `PackLifecycle` says a crash recovery does). Every state change
/// it makes goes through the lifecycle, applied in the writer's open batch, and reaches
/// `listener` once committed: the store's commits come here (`CommittedBatchListener`), what they
/// mean for each pack goes on to the listener (`PackActivityListener`). Loop thread only.
public final class PackScheduler: PackScheduling, JobOwner, CommittedBatchListener {
    /// Hears committed transitions, progress and revalidation counts, and failed requests (the
    /// API's event publisher; given at `init`, held weakly).
    public private(set) weak var listener: (any PackActivityListener)?
    /// Listing the packs to continue at `start()` failed (the error, the attempt); it is retried.
    public var onResumeListingFailed: ((any Error, Int) -> Void)?
    private var listingRetry: LoopTimer?

    private let loop: EventLoop
    private let fetcher: Fetcher
    private let store: any PackStore
    private let maxActive: Int
    private let settings: DownloadSettings
    private let clock: WallClock
    /// Waiting packs, ascending id (= creation order).
    private var queue: [Int64] = []
    /// Packs holding a slot: nil while their record is being read.
    private var active: [Int64: Job?] = [:]
    private var stopped = false

    /// A job holding a slot.
    private enum Job {
        case download(PackDownload)
        case revalidation(PackRevalidation)

        func stop() {
            switch self {
            case .download(let download): download.stop()
            case .revalidation(let revalidation): revalidation.stop()
            }
        }

        var expected: ExpectedCounts? {
            switch self {
            case .download(let download): download.expected
            case .revalidation(let revalidation): revalidation.expected
            }
        }
    }

    /// Runs the downloads of `store`'s packs and becomes the store's commit listener: each commit
    /// comes back here and goes on to `listener`. Loop thread.
    public init(loop: EventLoop, fetcher: Fetcher, store: any PackStore, listener: any PackActivityListener, maxActive: Int = 2,
                settings: DownloadSettings = DownloadSettings(), clock: WallClock = .system) {
        self.loop = loop
        self.fetcher = fetcher
        self.store = store
        self.listener = listener
        self.maxActive = max(1, maxActive)
        self.settings = settings
        self.clock = clock
        store.commitListener = self
    }

    /// Picks up the packs left `active` or `queued` (a restart), in creation order.
    public func start() {
        listScheduled(attempt: 1)
    }

    /// A failed listing is retried (0.5 s, doubling, at most 30 s apart) until it succeeds: the
    /// packs it would have found are still `active`/`queued` in the store, and giving up would
    /// leave them so with nothing downloading them. `onResumeListingFailed` hears of each failure.
    private func listScheduled(attempt: Int) {
        store.read({ reader in try reader.scheduledPackIDs() }) { [weak self] result in
            guard let self, !stopped else { return }
            switch result {
            case .success(let ids):
                listingRetry?.close()
                listingRetry = nil
                for id in ids {
                    transition(id, .restart)
                    packQueued(id)
                }
            case .failure(let error):
                onResumeListingFailed?(error, attempt)
                let timer = listingRetry ?? LoopTimer(loop: loop)
                listingRetry = timer
                timer.start(after: UInt64(min(30_000, 500 << min(attempt - 1, 6)))) { [weak self] in
                    self?.listScheduled(attempt: attempt + 1)
                }
            }
        }
    }

    /// Packs holding a download slot (downloading or revalidating).
    public var activePackIDs: [Int64] { active.keys.sorted() }

    public func packQueued(_ packID: Int64) {
        guard !stopped, active[packID] == nil, !queue.contains(packID) else { return }
        queue.append(packID)
        queue.sort()
        fillSlots()
    }

    public func packSuspended(_ packID: Int64) {
        queue.removeAll { $0 == packID }
        if let slot = active.removeValue(forKey: packID) {
            slot?.stop()
            fetcher.cancelAll(owner: UInt64(bitPattern: packID))
            fillSlots()
        }
    }

    public func packRemoved(_ packID: Int64) {
        packSuspended(packID)
    }

    /// Forwards committed progress and fails the packs whose writes the store refused (the
    /// store calls it on the loop thread with each committed batch): a refused write would
    /// otherwise end as a `complete` pack missing resources.
    public func committed(_ outcome: BatchOutcome) {
        for (packID, progress) in outcome.progress.sorted(by: { $0.key < $1.key }) {
            listener?.progressCommitted(packID, progress, expected: active[packID]??.expected)
        }
        for packID in outcome.tileLimitExceeded.sorted() {
            fail(packID, PackError(.tileLimitExceeded, "the server's tile limit is reached"))
        }
        if let error = outcome.error {
            let failure = error.isStorageFull
                ? PackError(.storageFull, "the database's disk is full (\(error.message)); what was stored is kept: free space, then resume the pack")
                : PackError(.storageError, "storing resources failed: \(error)")
            for packID in outcome.failedPackIDs.sorted() { fail(packID, failure) }
        }
    }

    private func fail(_ packID: Int64, _ error: PackError) {
        guard let slot = active[packID] else { return }
        slot?.stop()
        jobEnded(packID, .fail(error))
    }

    /// Stops every job; the packs stay `active`/`queued` in the store and continue on the next
    /// `start()`. Call before `fetcher.shutdown()`.
    public func shutdown() {
        stopped = true
        listingRetry?.close()
        listingRetry = nil
        queue.removeAll()
        for slot in active.values { slot?.stop() }
        active.removeAll()
    }

    private func fillSlots() {
        while !stopped, active.count < maxActive, !queue.isEmpty {
            let packID = queue.removeFirst()
            active[packID] = .some(nil)
            store.read({ reader in try reader.pack(packID) }) { [weak self] record in
                self?.begin(packID, record: record)
            }
        }
    }

    private func begin(_ packID: Int64, record read: Result<PackRecord?, any Error>) {
        // Suspended or removed while the record was read.
        guard !stopped, let slot = active[packID], slot == nil else { return }
        let record: PackRecord
        switch read {
        case .success(let found?):
            record = found
        case .success(nil):
            active[packID] = nil
            return fillSlots()
        case .failure(let error):
            // Unreadable is not gone: fail visibly rather than leave the pack queued with nothing running.
            return jobEnded(packID, .fail(PackError(.storageError, "cannot read the pack to start its download: \(error)")))
        }
        let region: RegionDefinition
        do {
            region = try RegionDefinition(stored: record.definition)
        } catch {
            return jobEnded(packID, .fail(PackError(.invalidDocument, "the stored region definition is unreadable: \(error)")))
        }
        let job: Job
        if let invalidation = record.invalidation, invalidation.isRunning {
            // A queued pack with a revalidation under way (`invalidate`, or one resumed)
            // revalidates instead of downloading.
            job = .revalidation(PackRevalidation(
                packID: packID, region: region, expected: record.expected, loop: loop, fetcher: fetcher, store: store,
                settings: settings, clock: clock, owner: self, listener: listener))
        } else {
            job = .download(PackDownload(
                packID: packID, region: region, limits: record.limits, loop: loop, fetcher: fetcher, store: store,
                settings: settings, clock: clock, owner: self, listener: listener, startArea: record.startArea,
                startAreaRecorded: record.startAreaReadyAt != nil))
        }
        active[packID] = job
        transition(packID, .start)
        switch job {
        case .download(let download): download.start()
        case .revalidation(let revalidation): revalidation.start()
        }
    }

    // MARK: JobOwner

    public func jobPlanKnown(_ packID: Int64, _ counts: ExpectedCounts) -> Bool {
        let maxTiles: Int64? = if case .download(let download)?? = active[packID] { download.maxTiles } else { nil }
        let event = PackLifecycle.Event.planKnown(counts, maxTiles: maxTiles)
        // The lifecycle is pure: what the store will make of the event is known now, so the job
        // never fetches a tile past the pack's own limit.
        guard case .success(let outcome) = PackLifecycle.transition(from: .active, on: event), outcome.to == .failed else {
            transition(packID, event)
            return true
        }
        active[packID] = nil
        transition(packID, event)
        fillSlots()
        return false
    }

    public func jobLinked(_ packID: Int64, _ progress: StoredProgress) {
        guard case let job?? = active[packID] else { return }
        listener?.progressCommitted(packID, progress, expected: job.expected)
    }

    public func jobCounted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress) {
        guard case let job?? = active[packID], let expected = job.expected else { return }
        listener?.revalidationCommitted(packID, counts, progress: progress, expected: expected)
    }

    /// Records how a job that held a slot ended, and gives the slot to the next pack.
    public func jobEnded(_ packID: Int64, _ event: PackLifecycle.Event) {
        guard active.removeValue(forKey: packID) != nil else { return }
        transition(packID, event)
        fillSlots()
    }

    /// Applies `event` in the writer's open batch and, once committed, tells the listener. A
    /// write the store refuses (a full disk refuses this one too) is retried until it lands —
    /// dropped, the pack would stay `active` with nothing downloading it.
    private func transition(_ packID: Int64, _ event: PackLifecycle.Event, attempt: Int = 1) {
        let now = clock.now
        let owned = LoopBound(self, loop: loop)
        store.inBatch({ database in try database.transition(packID, event, now: now) }) { result in
            let scheduler = owned.value
            switch result {
            case .success(.applied(let transition)) where transition.changesState:
                scheduler.listener?.packTransitioned(packID, transition)
            case .success:
                break
            case .failure:
                scheduler.retry(packID, event, attempt: attempt)
            }
        }
    }

    private func retry(_ packID: Int64, _ event: PackLifecycle.Event, attempt: Int) {
        guard !stopped else { return }
        let timer = LoopTimer(loop: loop)
        timer.start(after: UInt64(min(5_000, 100 << min(attempt - 1, 6)))) { [weak self] in
            timer.close()
            self?.transition(packID, event, attempt: attempt + 1)
        }
    }
}
