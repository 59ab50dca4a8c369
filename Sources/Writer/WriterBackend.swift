import Packs

/// A store's side of its one `BatchingWriter`: the write connection, and how a batch and a lone
/// operation are applied on it. The writer owns the queue, batching by count, time and flush,
/// commit waiters, access touches, per-pack change marks, backpressure counts and stopping; a
/// backend owns only the database: `SQLiteWriterBackend` (Store: the storage reserve, the update
/// hook's `PackRowChanges`) and `PostgresWriterBackend` (PostgresStore: retries on a conflict or
/// a lost connection, NOTIFY of commits).
///
/// # Implementation requirements
///
/// A backend is used by one thread at a time — made on the caller's thread, then used only by
/// the writer's thread until `writerStopped()`, its last call — so it locks nothing, and it may
/// block (disk, network): nobody waits on that thread but the writer's queue.
///
/// - `apply(_:)` commits the batch's writes, then its operations in order, then its access
///   touches, in ONE transaction, all or nothing, and never throws: a lost batch is reported in
///   `BatchApplication.outcome` (`error` set, `failedPackIDs` the packs that had writes in it,
///   nothing else durable). It may take more than one attempt (operations' `apply` then runs
///   again) and may commit the operations apart from the writes when the writes cannot land (a
///   full disk), as long as `operationsError` says how the operations ended. A batch with no
///   writes and no operations carries touches only; a backend may drop touches it has no room
///   for (access times are not worth a failed commit).
/// - `apply` and `perform` report the packs whose documents (their pack, region, progress and
///   revalidation rows) the work changed, as far as the database says so, including rows other
///   packs own that the writes moved (a body replaced under two packs' links changes both packs'
///   progress). nil says "any pack" (too many to name, or the backend cannot tell). The writer
///   marks the packs (`BatchingWriter.documentChanges(of:)`) before anyone hears of the commit;
///   a pack left out serves a stale cached document, so a backend never guesses low.
/// - `perform(_:changesPacks:)` runs one operation outside any batch, on a usable connection
///   (the operation makes its own transactions), and reports the error it threw or the backend
///   met before running it. `changesPacks` is the caller's promise; the backend's report of what
///   changed is what counts when the promise was wrong.
/// - `savepoint(on:_:)` runs `body` so that, if it throws, only its own changes are rolled back
///   and the enclosing batch goes on.
/// - `writerStopped()` is called once, on the writer thread, after the last batch: release the
///   connection and whatever threads the backend runs beside it.
///
/// # Testing a new backend
///
/// `Tests/StoreContractTests/WriterContractTests.swift` proves these behaviours through a
/// store's public protocols (batch sizes by count and time, operations riding a batch, per-pack
/// change marks, a full database, stopping with work pending). A store with a new backend adds
/// its factory to `StoreFactory.all` and passes that suite unchanged.
public protocol WriterBackend: AnyObject, SendableMetatype {
    /// What operations are given: the store's write connection.
    associatedtype Connection

    func apply(_ batch: WriterBatch<Connection>) -> BatchApplication
    func perform(_ operation: (Connection) throws -> Void, changesPacks: Bool) -> OperationReport
    func savepoint<T>(on connection: Connection, _ body: () throws -> T) throws -> T
    func writerStopped()
}

/// One batch as the writer hands it to its backend.
public struct WriterBatch<Connection> {
    /// Rows in submission order (at most the writer's `maximumBatchCount`).
    public var writes: [ResourceWrite]
    /// The `apply` of each operation riding the batch, in submission order.
    public var operations: [(Connection) -> Void]
    /// Reads to record as `accessed` in the same transaction.
    public var touches: AccessTouches
    /// The batch holds writes or an operation that did not promise to leave pack documents alone
    /// (PostgreSQL tells the other nodes only then).
    public var changesPacks: Bool

    public init(writes: [ResourceWrite], operations: [(Connection) -> Void], touches: AccessTouches, changesPacks: Bool) {
        self.writes = writes
        self.operations = operations
        self.touches = touches
        self.changesPacks = changesPacks
    }

    public var isEmpty: Bool { writes.isEmpty && operations.isEmpty && touches.isEmpty }
}

/// How a backend's `apply` ended.
public struct BatchApplication {
    /// What the batch made durable (`error` set when the writes were lost).
    public var outcome: BatchOutcome
    /// What the batch's operations finish with: nil when they committed.
    public var operationsError: StoreError?
    /// Packs whose document rows the transaction changed (rolled-back changes may be included);
    /// nil: possibly any pack.
    public var changedPacks: Set<Int64>?

    public init(outcome: BatchOutcome, operationsError: StoreError?, changedPacks: Set<Int64>?) {
        self.outcome = outcome
        self.operationsError = operationsError
        self.changedPacks = changedPacks
    }
}

/// How a backend's `perform` ended.
public struct OperationReport {
    /// What the operation threw, or why it could not run.
    public var error: (any Error)?
    /// Packs whose document rows it changed; nil: possibly any pack.
    public var changedPacks: Set<Int64>?

    public init(error: (any Error)?, changedPacks: Set<Int64>?) {
        self.error = error
        self.changedPacks = changedPacks
    }
}

/// How many rows a batch holds at most, and how long its first row waits at most.
public struct BatchLimits: Sendable {
    /// A batch commits when it holds this many writes…
    public var maximumBatchCount: Int
    /// …or when its oldest write or operation has waited this long.
    public var maximumBatchDelay: Duration

    public init(maximumBatchCount: Int = 256, maximumBatchDelay: Duration = .milliseconds(50)) {
        self.maximumBatchCount = max(1, maximumBatchCount)
        self.maximumBatchDelay = maximumBatchDelay
    }
}
