import Foundation
import Packs

/// The one thread that writes a store's database (GRDB keeps one serialized writer behind both
/// of its pool types; packd keeps one behind both of its stores). Producers — the loop thread,
/// readers recording access times — hand it resource writes and operations without ever
/// blocking on disk; it commits writes in batches, by count or by time or on `flush`, each batch
/// in ONE transaction with the operations riding it, then reports what became durable through
/// `onCommit` (which the store forwards to the loop).
///
/// Operations (create a pack, set its state, events…) go through the same queue, in order with
/// the writes around them: there is exactly one writer, and no lock contention in the database.
/// What the database is and how a batch lands in it is the `Backend`'s (`WriterBackend`).
public final class BatchingWriter<Backend: WriterBackend>: @unchecked Sendable {
    public typealias Connection = Backend.Connection
    public typealias BatchOperation = Writer.BatchOperation<Connection>

    enum Item {
        case write(ResourceWrite)
        /// Applied inside the open batch; `finish` hears whether that batch committed.
        case inBatch(BatchOperation)
        case flush(@Sendable () -> Void)
        /// Called once the writes before it are committed, without forcing a commit.
        case afterCommit(@Sendable () -> Void)
        /// `cancel` answers the caller when the writer has already stopped.
        case operation(run: () -> Void, cancel: () -> Void)
    }

    /// The error operations complete with once the writer has stopped.
    public struct Stopped: Error, CustomStringConvertible {
        public var description: String { "the writer has stopped" }
    }

    /// Marks held per pack before they are folded into one "every pack" mark.
    public static var maximumPackMarks: Int { 4096 }

    let condition = NSCondition()
    // Guarded by `condition`.
    var queue: [Item] = []
    var touches = AccessTouches()
    /// When pending touches are applied if no batch commits first.
    var touchDeadline: Date?
    /// The writer is blocked on `condition`: only then does a producer need to signal it
    /// (a signal per submitted row is a futex call per row otherwise).
    var writerIsWaiting = false
    var stopping = false
    var stopped = false
    private var queuedWrites = 0

    /// The store's side: writer thread only, after `init`.
    public let backend: Backend
    let limits: BatchLimits
    let onCommit: @Sendable (BatchOutcome) -> Void
    /// `whenCommitted` callbacks waiting for the open batch to commit (writer thread only).
    var commitWaiters: [@Sendable () -> Void] = []
    /// Operations riding the open batch (writer thread only).
    var batchOperations: [BatchOperation] = []
    private let finished = NSCondition()
    private var hasFinished = false
    /// Guards `changes`: read by the loop on every cached `GET /v1/packs/{id}`, never held long.
    private let changesLock = NSLock()
    /// A mark per commit, for the packs it changed (or every pack).
    private var changes = PackChangeMarks(capacity: maximumPackMarks)

    /// Starts the writer thread on `backend` (made on the caller's thread, used only by the writer
    /// thread from here on).
    public init(backend: Backend, limits: BatchLimits, threadName: String = "packd-writer",
                onCommit: @escaping @Sendable (BatchOutcome) -> Void) {
        self.backend = backend
        self.limits = limits
        self.onCommit = onCommit
        // The thread keeps the writer alive until `stop()` returns. Not stored: a stored Thread
        // keeps its closure, and with it the writer and its connections, for good.
        let thread = Thread { self.run() }
        thread.name = threadName
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

    /// Applies `operation` inside the open batch (opening one if none is), so it commits with
    /// the rows around it instead of cutting the batch short. Thread-safe, never blocks on disk.
    public func inBatch(_ operation: BatchOperation) {
        enqueue(.inBatch(operation), countsAsWrite: false)
    }

    /// Applies `body` inside the open batch in a savepoint of its own (`WriterBackend.savepoint`):
    /// if it throws, only its own changes are rolled back. `then` hears its result once the batch
    /// committed, or the batch's error (on the writer thread; nil: fire and forget).
    public func inBatch<T: Sendable>(changesPacks: Bool = true, savepoint body: @escaping (Connection) throws -> T,
                                     then: (@Sendable (Result<T, any Error>) -> Void)?) {
        let backend = backend
        inBatch(.reporting(changesPacks: changesPacks, { connection in try backend.savepoint(on: connection) { try body(connection) } },
                           then: then))
    }

    /// Runs `operation` on the writer thread after the writes submitted before it are committed;
    /// `completion` receives its result there. `changesPacks: false` promises the operation writes
    /// nothing a pack document shows (the event log): it then moves only the packs the backend
    /// saw it change.
    public func perform<T: Sendable>(_ operation: @escaping @Sendable (Connection) throws -> T,
                                     changesPacks: Bool = true,
                                     completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        enqueue(.operation(run: { [self] in
            var value: T?
            let report = backend.perform({ connection in value = try operation(connection) }, changesPacks: changesPacks)
            // Operations may change rows in ways a backend's report misses (SQLite's update hook
            // does not see every deletion): one that did not promise otherwise moves every pack.
            // One that promised to change none still moves the packs it was seen to change.
            if changesPacks || report.changedPacks?.isEmpty == false {
                countChange(packs: changesPacks ? nil : report.changedPacks)
            }
            if let error = report.error {
                completion(.failure(error))
            } else if let value {
                completion(.success(value))
            } else {
                completion(.failure(StoreError(.other, "the operation did not run")))
            }
        }, cancel: { completion(.failure(Stopped())) }), countsAsWrite: false)
    }

    /// Counts the batches and operations that finished, bumped after each one's transaction ends
    /// and before anyone is told of it (`onCommit`, completions, waiters). A cache of rendered
    /// packs tagged with the count it saw before reading is stale once the count moves, whichever
    /// table the write touched: nothing that writes a pack row can be forgotten. Any thread.
    public var committedChanges: UInt64 {
        changesLock.withLock { changes.count }
    }

    /// Like `committedChanges`, for one pack's document (its pack, region, progress and
    /// revalidation rows): moves whenever a commit may have changed them — a batch whose rows the
    /// backend reported changed for the pack (or could not say which), any operation — and stays
    /// put while batches write other packs, so a download's commits leave the cached documents of
    /// idle packs valid. Never goes back. Any thread.
    public func documentChanges(of packID: Int64) -> UInt64 {
        changesLock.withLock { changes.value(of: packID) }
    }

    /// One commit: `packs` nil when it may have touched any pack.
    func countChange(packs: Set<Int64>?) {
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

    /// Commits what is queued, stops the thread and waits for it (and the backend's
    /// `writerStopped`). Idempotent. Must be called: the running thread owns the writer.
    public func stop() {
        condition.lock()
        stopping = true
        wakeWriterLocked()
        condition.unlock()
        finished.lock()
        while !hasFinished { finished.wait() }
        finished.unlock()
    }

    /// Call with `condition` locked.
    func wakeWriterLocked() {
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

    /// Takes what is queued (the writer thread, with `condition` locked).
    func takeQueueLocked() -> [Item] {
        let items = queue
        queue.removeAll(keepingCapacity: true)
        queuedWrites = 0
        return items
    }

    /// The writer thread is done: wakes `stop()`.
    func finishRunning() {
        backend.writerStopped()
        finished.lock()
        hasFinished = true
        finished.broadcast()
        finished.unlock()
    }

    var batchDelaySeconds: Double {
        Double(limits.maximumBatchDelay.components.seconds)
            + Double(limits.maximumBatchDelay.components.attoseconds) / 1e18
    }
}
