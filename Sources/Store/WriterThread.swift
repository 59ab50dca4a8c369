import Foundation
import Packs

/// The one thread that writes the database. Producers (the loop thread) hand it resource writes
/// and operations without ever blocking on disk; it commits writes in batches, by count or by
/// time or on `flush`, each batch in ONE transaction, then reports what became durable through
/// `onCommit` (which the download layer forwards to the loop through a `LoopWakeup`).
///
/// Operations (create pack, set state, events…) go through the same queue, in order with the
/// writes around them, so there is exactly one writer and no lock contention inside SQLite.
public final class WriterThread: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// A batch commits when it holds this many writes…
        public var maximumBatchCount: Int
        /// …or when its oldest write has waited this long.
        public var maximumBatchDelay: Duration
        /// The clock for `accessed` and other stored times (injectable for tests).
        public var clock: WallClock
        /// Page size for a newly created database (see `SchemaMigrator.openWriter`); an existing
        /// file keeps its own. nil: SQLite's 4096.
        public var pageSize: Int?
        /// Bytes held back on the database's file system for the state changes and events that
        /// must land once it is full (`StorageReserve`); 0: none. `packd serve` holds
        /// `defaultStorageReserveBytes`.
        public var storageReserveBytes: Int64
        /// Versions kept per pack (`--keep-versions`).
        public var keepVersions = 3

        /// 16 MiB: a pack's failure, its events and a few hundred more such commits. A commit logs
        /// whole pages (16 KiB each at `defaultPageSize`), so the room scales with the page size.
        public static let defaultStorageReserveBytes: Int64 = 16 << 20

        /// 16 KiB pages for a new database. A tile body is written page by page — a 4 KiB page is
        /// a WAL frame, its checksum and a later copy into the database for every 4 KiB of a
        /// raster tile — so larger pages cut the writer's and the checkpointer's CPU per tile:
        /// `packd-bench download --tiles 20000` (20 KiB tiles, loopback) 252 → 203 µs of packd CPU
        /// per tile and ~4,900 → ~5,400 tiles/s; against an upstream 20 ms away over HTTP/2 it is
        /// CPU the loop thread gets back (0.80 → 0.89 of curl's rate, `download-wan --page-size`).
        /// 8 KiB pages bought nothing measurable. The price is space where rows fall between pages
        /// (a row of up to 16 KiB is kept whole in a leaf page): Natural Earth's PNG tiles (4 KiB
        /// on average) take 8 % more file, PNGs of 2–25 KiB 18 % more, its vector tiles 1 % less,
        /// 20 KiB tiles the same; 64 KiB pages would waste up to a third of a page on 25–45 KiB
        /// rows. `packd serve --database-page-size 4096` chooses space over CPU. Exports are
        /// new files with SQLite's 4096, as MapLibre writes them: what a phone side-loads does not
        /// change.
        public static let defaultPageSize = 16384

        public init(maximumBatchCount: Int = 256, maximumBatchDelay: Duration = .milliseconds(50),
                    clock: WallClock = .system, pageSize: Int? = defaultPageSize, storageReserveBytes: Int64 = 0) {
            self.maximumBatchCount = max(1, maximumBatchCount)
            self.maximumBatchDelay = maximumBatchDelay
            self.clock = clock
            self.pageSize = pageSize
            self.storageReserveBytes = storageReserveBytes
        }
    }

    private enum Item {
        case write(ResourceWrite)
        /// Applied inside the open batch; `finish` hears whether that batch committed.
        case inBatch(BatchOperation)
        case flush(@Sendable () -> Void)
        /// Called once the writes before it are committed, without forcing a commit.
        case afterCommit(@Sendable () -> Void)
        /// `cancel` answers the caller when the writer has already stopped.
        case operation(run: (OfflineDatabase) -> Void, cancel: () -> Void)
    }

    /// The error operations complete with once the writer has stopped.
    public struct Stopped: Error {}

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: [Item] = []
    private var touches = AccessTouches()
    /// When pending touches are applied if no batch commits first.
    private var touchDeadline: Date?
    /// The writer is blocked on `condition`: only then does a producer need to signal it
    /// (a signal per submitted row is a futex call per row otherwise).
    private var writerIsWaiting = false
    private var stopping = false
    private var stopped = false
    private var queuedWrites = 0

    private let configuration: Configuration
    private let onCommit: @Sendable (BatchOutcome) -> Void
    private let store: OfflineDatabase
    let checkpointer: WALCheckpointer
    /// `whenCommitted` callbacks waiting for the open batch to commit (writer thread only).
    private var commitWaiters: [@Sendable () -> Void] = []
    /// Operations riding the open batch (writer thread only).
    private var batchOperations: [BatchOperation] = []
    private let finished = NSCondition()
    private var hasFinished = false
    /// Guards `changes`: read by the loop on every cached `GET /v1/packs/{id}`, never held long.
    private let changesLock = NSLock()
    /// A mark per commit, for the packs it changed (or every pack).
    private var changes = PackChangeMarks(capacity: maximumPackMarks)
    /// Packs whose document rows the open batch changed (writer thread only).
    private let rowChanges: PackRowChanges
    /// Writer thread only (after `init`).
    private let reserve: StorageReserve

    /// Opens (creating/migrating) the database at `path` and starts the thread.
    public init(path: String, configuration: Configuration = Configuration(),
                onCommit: @escaping @Sendable (BatchOutcome) -> Void) throws {
        self.store = try OfflineDatabase(path: path, pageSize: configuration.pageSize)
        store.clock = configuration.clock
        store.keepVersions = max(1, configuration.keepVersions)
        checkpointer = try WALCheckpointer(path: path)
        checkpointer.attach(to: store.database)
        rowChanges = PackRowChanges(database: store.database)
        self.configuration = configuration
        self.onCommit = onCommit
        reserve = StorageReserve(databasePath: path, bytes: configuration.storageReserveBytes)
        // A disk too full for the reserve is treated as full from the start.
        reserve.hold()
        // The thread keeps the writer alive until `stop()` returns. Not stored: a stored Thread
        // keeps its closure, and with it the writer and its connections, for good.
        let thread = Thread { self.run() }
        thread.name = "packd-writer"
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Thread-safe, never blocks on disk. Writes are committed in submission order.
    public func submit(_ write: ResourceWrite) {
        enqueue(.write(write), countsAsWrite: true)
    }

    public func submit(contentsOf writes: [ResourceWrite]) {
        condition.lock()
        guard !stopped else { return condition.unlock() }
        queue.append(contentsOf: writes.map { .write($0) })
        queuedWrites += writes.count
        wakeWriterLocked()
        condition.unlock()
    }

    /// Commits everything submitted before this call, then calls `completion` (on the writer thread).
    public func flush(_ completion: @escaping @Sendable () -> Void = {}) {
        enqueue(.flush(completion), countsAsWrite: false)
    }

    /// Calls `completion` (on the writer thread) once everything submitted before this call is
    /// committed, in the batch it would have been committed in anyway: unlike `flush`, it never
    /// cuts a batch short, so a producer can use it for backpressure without shrinking batches.
    public func whenCommitted(_ completion: @escaping @Sendable () -> Void) {
        enqueue(.afterCommit(completion), countsAsWrite: false)
    }

    /// One fact riding a batch: `apply` runs inside the batch's transaction (in a savepoint of its
    /// own), `finish` after the batch committed (nil) or was rolled back (its error).
    public struct BatchOperation: @unchecked Sendable {
        let apply: (OfflineDatabase) -> Void
        let finish: (StoreError?) -> Void
        /// false: writes nothing a pack document shows (the event log), so a batch of these
        /// alone leaves `committedChanges` (the API's cache tag) as it was.
        let changesPacks: Bool

        public init(changesPacks: Bool = true, apply: @escaping (OfflineDatabase) -> Void,
                    finish: @escaping (StoreError?) -> Void) {
            self.apply = apply
            self.finish = finish
            self.changesPacks = changesPacks
        }
    }

    /// Applies `operation` inside the open batch (opening one if none is), so it commits with
    /// the rows around it instead of cutting the batch short. Thread-safe, never blocks on disk.
    public func inBatch(_ operation: BatchOperation) {
        enqueue(.inBatch(operation), countsAsWrite: false)
    }

    /// Runs `operation` on the writer thread after the writes submitted before it are committed;
    /// `completion` receives its result there. `changesPacks: false` promises the operation writes
    /// nothing a pack document shows (the event log): it then leaves `committedChanges` alone.
    public func perform<T: Sendable>(_ operation: @escaping @Sendable (OfflineDatabase) throws -> T,
                                     changesPacks: Bool = true,
                                     completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        enqueue(.operation(run: { [self] store in
                               let result = Result { try operation(store) }
                               if case .failure(let error) = result, Self.isStorageFull(error) { reserve.release() }
                               // What an operation touched is not read from the hook alone (see
                               // `PackRowChanges`): every pack's document may have changed. One
                               // that promised to change none still moves the packs it did change.
                               let touchedPacks = rowChanges.take()
                               if changesPacks {
                                   countChange(packs: nil)
                               } else if !touchedPacks.isEmpty {
                                   countChange(packs: touchedPacks)
                               }
                               completion(result)
                           },
                           cancel: { completion(.failure(Stopped())) }), countsAsWrite: false)
    }

    /// Counts the batches and operations that finished, bumped after each one's transaction ends
    /// and before anyone is told of it (`onCommit`, completions, waiters). A cache of rendered
    /// packs tagged with the count it saw before reading is stale once the count moves, whichever
    /// table the write touched: nothing that writes a pack row can be forgotten. Any thread.
    public var committedChanges: UInt64 {
        changesLock.withLock { changes.count }
    }

    /// Like `committedChanges`, for one pack's document (its `packd_packs`, `regions`,
    /// `packd_progress` and `packd_invalidations` rows): moves whenever a commit may have
    /// changed them — a batch whose rows SQLite reported changed for the pack
    /// (`PackRowChanges`), or any operation — and stays put while batches write other packs, so
    /// a download's commits leave the cached documents of idle packs valid. Never goes back: a
    /// value seen once means nothing changed for as long as it is returned. Any thread.
    public func documentChanges(of packID: Int64) -> UInt64 {
        changesLock.withLock { changes.value(of: packID) }
    }

    /// Marks held per pack before they are folded into one "every pack" mark.
    static let maximumPackMarks = 4096

    /// One commit: `packs` nil when it may have touched any pack.
    private func countChange(packs: Set<Int64>?) {
        changesLock.withLock {
            if let packs { changes.mark(packs) } else { changes.markEveryPack() }
        }
    }

    /// Records reads; the writer updates `accessed` for them in its next transaction, or after
    /// `maximumBatchDelay` when no write comes, so reads never cost a transaction each.
    public func touch(tileID: Int64? = nil, resourceID: Int64? = nil) {
        condition.lock()
        let first = touches.isEmpty
        if let tileID { touches.tileIDs.insert(tileID) }
        if let resourceID { touches.resourceIDs.insert(resourceID) }
        if first && !touches.isEmpty {
            touchDeadline = Date().addingTimeInterval(batchDelaySeconds)
            wakeWriterLocked()
        }
        condition.unlock()
    }

    /// Writes waiting in the queue (not yet taken into a batch): for producer backpressure.
    public var pendingWrites: Int {
        condition.lock()
        defer { condition.unlock() }
        return queuedWrites
    }

    /// Commits what is queued, stops the thread and waits for it. Idempotent. Must be called:
    /// the running thread owns the writer.
    public func stop() {
        condition.lock()
        stopping = true
        wakeWriterLocked()
        condition.unlock()
        finished.lock()
        while !hasFinished { finished.wait() }
        finished.unlock()
        // The writer thread is gone: its connection may be touched from here.
        checkpointer.detach(from: store.database)
        checkpointer.stop()
    }

    /// Call with `condition` locked.
    private func wakeWriterLocked() {
        if writerIsWaiting { condition.signal() }
    }

    private func enqueue(_ item: Item, countsAsWrite: Bool) {
        condition.lock()
        if stopped {
            condition.unlock()
            // Nobody will take it: answer now rather than leave a caller waiting forever.
            switch item {
            case .write: break
            case .inBatch(let operation): operation.finish(StoreError(.other, "the writer has stopped"))
            case .flush(let completion), .afterCommit(let completion): completion()
            case .operation(_, let cancel): cancel()
            }
            return
        }
        queue.append(item)
        if countsAsWrite { queuedWrites += 1 }
        wakeWriterLocked()
        condition.unlock()
    }

    // MARK: The writer loop

    private var batchDelaySeconds: Double {
        Double(configuration.maximumBatchDelay.components.seconds)
            + Double(configuration.maximumBatchDelay.components.attoseconds) / 1e18
    }

    private func run() {
        var batch: [ResourceWrite] = []
        batch.reserveCapacity(configuration.maximumBatchCount)
        var batchDeadline: Date?
        let delay = batchDelaySeconds

        while true {
            condition.lock()
            while queue.isEmpty && !stopping {
                let deadline = [batchDeadline, touches.isEmpty ? nil : touchDeadline].compactMap { $0 }.min()
                writerIsWaiting = true
                defer { writerIsWaiting = false }
                if let deadline {
                    if !condition.wait(until: deadline) { break }
                } else {
                    condition.wait()
                }
            }
            let items = queue
            queue.removeAll(keepingCapacity: true)
            queuedWrites = 0
            let shouldStop = stopping && items.isEmpty
            if shouldStop { stopped = true }
            condition.unlock()

            for item in items {
                switch item {
                case .write(let write):
                    if batchDeadline == nil { batchDeadline = Date().addingTimeInterval(delay) }
                    batch.append(write)
                    if batch.count >= configuration.maximumBatchCount {
                        commit(&batch)
                        batchDeadline = nil
                    }
                case .inBatch(let operation):
                    if batchDeadline == nil { batchDeadline = Date().addingTimeInterval(delay) }
                    batchOperations.append(operation)
                case .flush(let completion):
                    commit(&batch)
                    batchDeadline = nil
                    completion()
                case .afterCommit(let completion):
                    if batch.isEmpty && batchOperations.isEmpty { completion() } else { commitWaiters.append(completion) }
                case .operation(let operation, _):
                    commit(&batch)
                    batchDeadline = nil
                    operation(store)
                }
            }
            if let deadline = batchDeadline, Date() >= deadline || shouldStop {
                commit(&batch)
                batchDeadline = nil
            } else if batch.isEmpty && batchOperations.isEmpty {
                commitTouchesIfAny()
            }
            if shouldStop {
                commit(&batch)
                break
            }
        }
        finished.lock()
        hasFinished = true
        finished.broadcast()
        finished.unlock()
    }

    private func takeTouches() -> AccessTouches {
        condition.lock()
        defer { condition.unlock() }
        let taken = touches
        touches = AccessTouches()
        return taken
    }

    /// Commits the batch's writes and the operations riding it in one transaction. On a full
    /// disk (`StorageReserve`): the batch that meets it is rolled back and the reserve released,
    /// and its operations (state changes, failures, events) are applied again alone, in the room
    /// the reserve held; until the file system has room again, writes are refused without
    /// touching it and operations are committed alone.
    private func commit(_ batch: inout [ResourceWrite]) {
        guard !batch.isEmpty || !batchOperations.isEmpty else { return }
        let now = configuration.clock.now
        let pendingTouches = takeTouches()
        let started = ContinuousClock.now
        let operations = batchOperations
        batchOperations.removeAll(keepingCapacity: true)
        var outcome: BatchOutcome
        var operationsError: StoreError?
        if batch.isEmpty || regainReserve() {
            let held = reserve.isHeld
            outcome = store.apply(batch, operations: operations.map(\.apply), now: now,
                                  touches: held ? pendingTouches : AccessTouches())
            operationsError = outcome.error
            if let error = outcome.error, error.isStorageFull, held {
                reserve.release()
                if !operations.isEmpty {
                    operationsError = store.apply([], operations: operations.map(\.apply), now: now).error
                }
            }
        } else {
            outcome = BatchOutcome()
            outcome.error = StoreError(.storageFull, Self.diskFullMessage(reserve))
            outcome.failedPackIDs = Set(batch.compactMap(\.packID))
            if !operations.isEmpty {
                operationsError = store.apply([], operations: operations.map(\.apply), now: now).error
            }
        }
        outcome.duration = started.duration(to: .now)
        outcome.committedWrites = batch.count
        let changedPacks = !batch.isEmpty || operations.contains(where: \.changesPacks)
        batch.removeAll(keepingCapacity: true)
        // Rolled-back rows are noted too: a pack marked for nothing only misses the cache once.
        let touchedPacks = rowChanges.take()
        if changedPacks || !touchedPacks.isEmpty { countChange(packs: touchedPacks) }
        if outcome.committedWrites > 0 || outcome.error != nil { onCommit(outcome) }
        for operation in operations { operation.finish(operationsError) }
        let waiters = commitWaiters
        commitWaiters.removeAll(keepingCapacity: true)
        for waiter in waiters { waiter() }
    }

    /// Takes the reserve back when the file system has room again. A batch the full disk
    /// refused left its pages allocated at the end of the write-ahead log (reused by later
    /// commits, but not free to the file system), so while that is short of room the log is
    /// checkpointed and truncated, at most every `truncateInterval`.
    private func regainReserve() -> Bool {
        if reserve.regain() { return true }
        let now = ContinuousClock.now
        if let last = lastLogTruncation, last.duration(to: now) < Self.truncateInterval { return false }
        lastLogTruncation = now
        store.database.truncateWriteAheadLog()
        return reserve.regain()
    }

    private static let truncateInterval: Duration = .seconds(5)
    /// Writer thread only.
    private var lastLogTruncation: ContinuousClock.Instant?

    /// Why writes are refused while the disk is full.
    private static func diskFullMessage(_ reserve: StorageReserve) -> String {
        let free = reserve.availableBytes.map { "\($0 >> 10) KiB free" } ?? "free space unknown"
        return "the file system holding the database is full (\(free)); writes resume once \(2 * reserve.bytes >> 10) KiB are free"
    }

    /// A failure SQLite reported as a full disk (or the configured size cap), however wrapped.
    private static func isStorageFull(_ error: any Error) -> Bool {
        switch error {
        case let error as DatabaseError: error.isStorageFull
        case let error as StoreError: error.isStorageFull
        case ImportError.store(let error): error.isStorageFull
        default: false
        }
    }

    /// Access times are not worth the reserve's room: dropped while the disk is full.
    private func commitTouchesIfAny() {
        let pendingTouches = takeTouches()
        guard !pendingTouches.isEmpty, reserve.isHeld else { return }
        let outcome = store.apply([], now: configuration.clock.now, touches: pendingTouches)
        if let error = outcome.error {
            if error.isStorageFull { reserve.release() }
            onCommit(outcome)
        }
    }
}
