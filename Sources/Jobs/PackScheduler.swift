import Fetch
import Foundation
import Loop
import Packs
import Plan
import Store

/// Runs queued packs, at most `maxActive` at a time, in creation order. The queue is the
/// database: `queued` and `active` packs are picked up again on `start()` after a restart.
/// The API tells it of changes (`packQueued`, `packSuspended`, `packRemoved`); it tells the API
/// of state changes and committed progress through `onStateChange` and `onProgress`, so Jobs does
/// not depend on the API. Loop thread only.
public final class PackScheduler {
    /// A committed state change: pack, new state, previous state, error JSON.
    public var onStateChange: ((Int64, PackState, PackState, PackError?) -> Void)?
    /// Progress as committed by the writer, with the pack's expected counts when its download knows them.
    public var onProgress: ((Int64, StoredProgress, ExpectedCounts?) -> Void)?
    /// A revalidation's committed counts, with the pack's progress and expected counts.
    public var onInvalidation: ((Int64, PackInvalidation, StoredProgress, ExpectedCounts) -> Void)?
    /// Handed to every download it starts (set before `start()`).
    public var observer = DownloadObserver()
    /// Listing the packs to continue at `start()` failed (the error, the attempt); it is retried.
    public var onResumeListingFailed: ((any Error, Int) -> Void)?
    private var listingRetry: LoopTimer?

    private let loop: EventLoop
    private let fetcher: Fetcher
    private let writer: WriterThread
    private let databasePath: String
    private let maxActive: Int
    private let settings: DownloadSettings
    private let reader: PackRecordReader
    /// Waiting packs, ascending id (= creation order).
    private var queue: [Int64] = []
    /// Packs holding a slot: nil while their record is being read.
    private var active: [Int64: PackDownload?] = [:]
    /// Packs revalidating (`invalidate`): they hold a download slot too.
    private var revalidations: [Int64: PackRevalidation] = [:]
    private var stopped = false

    public init(loop: EventLoop, fetcher: Fetcher, writer: WriterThread, databasePath: String, maxActive: Int = 2,
                settings: DownloadSettings = DownloadSettings()) throws {
        self.loop = loop
        self.fetcher = fetcher
        self.writer = writer
        self.databasePath = databasePath
        self.maxActive = max(1, maxActive)
        self.settings = settings
        reader = try PackRecordReader(path: databasePath)
    }

    /// Picks up the packs left `active` or `queued` (a restart), in creation order.
    public func start() {
        listResumable(attempt: 1)
    }

    /// A failed listing is retried (0.5 s, doubling, at most 30 s apart) until it succeeds: the
    /// packs it would have found are still `active`/`queued` in the database, and giving up would
    /// leave them so with nothing downloading them. `onResumeListingFailed` hears of each failure.
    private func listResumable(attempt: Int) {
        let reader = reader
        loop.runOnThreadPool({ reader.resumableIDs() }, then: { [weak self] result in
            guard let self, !stopped else { return }
            switch result {
            case .success(let ids):
                listingRetry?.close()
                listingRetry = nil
                for id in ids { packQueued(id) }
            case .failure(let error):
                onResumeListingFailed?(error, attempt)
                let timer = listingRetry ?? LoopTimer(loop: loop)
                listingRetry = timer
                timer.start(after: UInt64(min(30_000, 500 << min(attempt - 1, 6)))) { [weak self] in
                    self?.listResumable(attempt: attempt + 1)
                }
            }
        })
    }

    /// Packs holding a download slot (downloading or revalidating).
    public var activePackIDs: [Int64] { (Array(active.keys) + Array(revalidations.keys)).sorted() }

    /// The pack is `queued` in the database (created with `start`, or resumed).
    public func packQueued(_ packID: Int64) {
        guard !stopped, active[packID] == nil, !queue.contains(packID) else { return }
        queue.append(packID)
        queue.sort()
        fillSlots()
    }

    /// The pack left `queued`/`active` (suspended): its transfers stop now.
    public func packSuspended(_ packID: Int64) {
        queue.removeAll { $0 == packID }
        if let slot = active.removeValue(forKey: packID) {
            slot?.stop()
            fetcher.cancelAll(owner: UInt64(bitPattern: packID))
            fillSlots()
        }
        if let revalidation = revalidations.removeValue(forKey: packID) {
            revalidation.stop()
            fillSlots()
        }
    }

    /// The pack is deleted: the same as a suspend, for the scheduler.
    public func packRemoved(_ packID: Int64) {
        packSuspended(packID)
    }

    /// Forwards committed progress and fails the packs whose writes the store refused (call on
    /// the loop thread from the writer's `onCommit`): a refused write would otherwise end as a
    /// `complete` pack missing resources.
    public func committed(_ outcome: BatchOutcome) {
        for (packID, progress) in outcome.progress.sorted(by: { $0.key < $1.key }) {
            onProgress?(packID, progress, active[packID]??.expected ?? revalidations[packID]?.expected)
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

    private func fail(_ packID: Int64, _ failure: PackError) {
        if let revalidation = revalidations[packID] {
            revalidation.stop()
            return revalidationEnded(packID, .failed(failure))
        }
        guard let slot = active[packID] else { return }
        slot?.stop()
        ended(packID, .failed(failure))
    }

    /// Stops every download; the packs stay `active`/`queued` in the database and continue on the
    /// next `start()`. Call before `fetcher.shutdown()`.
    public func shutdown() {
        stopped = true
        listingRetry?.close()
        listingRetry = nil
        queue.removeAll()
        for slot in active.values { slot?.stop() }
        active.removeAll()
        for revalidation in revalidations.values { revalidation.stop() }
        revalidations.removeAll()
    }

    private func fillSlots() {
        while !stopped, active.count + revalidations.count < maxActive, !queue.isEmpty {
            let packID = queue.removeFirst()
            active[packID] = .some(nil)
            let reader = reader
            loop.runOnThreadPool({ reader.record(packID) }, then: { [weak self] record in
                self?.begin(packID, record: record)
            })
        }
    }

    private func begin(_ packID: Int64, record read: Result<PackRecord?, any Error>) {
        // Suspended or removed while the record was read.
        guard !stopped, let slot = active[packID], slot == nil else { return }
        let record: PackRecord?
        switch read {
        case .success(let found):
            record = found
        case .failure(let error):
            // Unreadable is not gone: fail visibly rather than leave the pack queued with nothing running.
            active[packID] = nil
            transition(PackTransition(packID: packID, from: [.queued, .active], to: .failed, error: PackError(
                .storageError, "cannot read the pack to start its download: \(error)")))
            return fillSlots()
        }
        guard let record else {
            active[packID] = nil
            return fillSlots()
        }
        let region: RegionDefinition
        do {
            let json = try JSONSerialization.jsonObject(with: Data(record.definition.utf8))
            region = try RegionDefinition(mapLibreJSON: json)
        } catch {
            active[packID] = nil
            transition(PackTransition(packID: packID, from: [.queued, .active], to: .failed, error: PackError(
                .invalidDocument, "the stored region definition is unreadable: \(error)")))
            return fillSlots()
        }
        if let invalidation = record.invalidation, invalidation.isRunning {
            active[packID] = nil
            return beginRevalidation(packID, record: record, region: region)
        }
        let download: PackDownload
        do {
            download = try PackDownload(packID: packID, region: region, loop: loop, fetcher: fetcher, writer: writer,
                                        databasePath: databasePath, maxTiles: record.maxTiles,
                                        maxBytesPerSecond: record.maxBytesPerSecond,
                                        settings: settings, observer: observer) { [weak self] outcome in
                self?.ended(packID, outcome)
            }
        } catch {
            active[packID] = nil
            return failToOpen(packID, "resume the download", error)
        }
        download.onLinked = { [weak self] progress in
            guard let self, case let slot?? = active[packID] else { return }
            onProgress?(packID, progress, slot.expected)
        }
        active[packID] = download
        transition(PackTransition(packID: packID, from: [.queued], to: .active, error: nil))
        download.start()
    }

    private func ended(_ packID: Int64, _ outcome: PackDownload.Outcome) {
        guard active.removeValue(forKey: packID) != nil else { return }
        settle(packID, outcome)
    }

    /// Records how a job that held a slot ended, and gives the slot to the next pack.
    private func settle(_ packID: Int64, _ outcome: PackDownload.Outcome) {
        switch outcome {
        case .complete:
            transition(PackTransition(packID: packID, from: [.active], to: .complete, error: nil))
        case .failed(let failure):
            transition(PackTransition(packID: packID, from: [.active], to: .failed, error: failure))
        }
        fillSlots()
    }

    /// A queued pack with a revalidation under way (`invalidate`, or one resumed) revalidates
    /// instead of downloading.
    private func beginRevalidation(_ packID: Int64, record: PackRecord, region: RegionDefinition) {
        let expected = ExpectedCounts(resources: record.expectedResources, tiles: record.expectedTiles,
                                      precise: record.expectedIsPrecise)
        let revalidation: PackRevalidation
        do {
            revalidation = try PackRevalidation(
                packID: packID, region: region, expected: expected, loop: loop, fetcher: fetcher, writer: writer,
                databasePath: databasePath, settings: settings,
                onCounts: { [weak self] counts, progress in self?.onInvalidation?(packID, counts, progress, expected) },
                onEnd: { [weak self] outcome in self?.revalidationEnded(packID, outcome) })
        } catch {
            return failToOpen(packID, "revalidate the pack", error)
        }
        revalidations[packID] = revalidation
        transition(PackTransition(packID: packID, from: [.queued], to: .active, error: nil))
        revalidation.start()
    }

    /// No read connection: fail visibly rather than leave the pack `queued` with nothing running.
    private func failToOpen(_ packID: Int64, _ purpose: String, _ error: any Error) {
        transition(PackTransition(packID: packID, from: [.queued, .active], to: .failed, error: PackError(
            .storageError, "cannot open the database to \(purpose): \(error)")))
        fillSlots()
    }

    private func revalidationEnded(_ packID: Int64, _ outcome: PackRevalidation.Outcome) {
        guard revalidations.removeValue(forKey: packID) != nil else { return }
        settle(packID, outcome)
    }

    /// Applies `change` on the writer (after everything submitted before it), then publishes it.
    private func transition(_ change: PackTransition) {
        let owned = LoopBound(self)
        let loop = loop
        writer.perform({ database in try change.apply(database) }, completion: { result in
            guard case .success(let previous?) = result else { return }
            loop.execute {
                owned.value.onStateChange?(change.packID, change.to, previous, change.error)
            }
        })
    }
}
