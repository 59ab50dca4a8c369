/// The seam packd wires one store into (GRDB's `DatabaseWriter`/`DatabaseReader` split): reads
/// on threads that may block, writes on the store's one writer, rows into batches, and what
/// became durable back to the loop. Jobs and the API see only this and the protocols it hands
/// out; `Store` (SQLite, the embedded default) and `PostgresStore` (cluster mode) implement it.
///
/// Threads: every method may be called on the loop thread and never blocks it. Completions
/// (`then`, `commitListener`) run on the loop thread the store was made with, in order of commit.
public protocol PackStore: ResourceSink {
    /// Runs `query` on a reading thread; `then` gets its result on the loop thread.
    func read<T: Sendable>(_ query: @escaping @Sendable (any StoreReading & PackExporting) throws -> T,
                           then: @escaping (Result<T, any Error>) -> Void)
    /// Runs `operation` on the writer, after the rows submitted before it (the open batch is
    /// committed first: a request is waiting); `then` gets its result on the loop. Each store
    /// method it calls is atomic on its own.
    func write<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                            then: @escaping (Result<T, any Error>) -> Void)
    /// A reader on the caller's thread, for start-up work before the loop runs.
    func readNow<T>(_ query: (any StoreReading) throws -> T) throws -> T
    /// Hears what each committed batch made durable, on the loop thread: the download engine,
    /// which registers itself when it is made with this store (before the first write). Weak.
    var commitListener: (any CommittedBatchListener)? { get set }
    /// Counts finished batches and writes, bumped before anyone is told of them: a cache of
    /// rendered packs tagged with the count it saw before reading is stale once it moves. In
    /// cluster mode it also moves when another node commits. Any thread.
    var committedChanges: UInt64 { get }
    /// Like `committedChanges`, for what `packID`'s document is read from (its pack, region,
    /// progress and revalidation rows): moves whenever a commit may have changed them, never goes
    /// back, and may stay put while commits change only other packs — so a download's commits do
    /// not invalidate the cached documents of packs it does not write. Moving more often than
    /// needed is always allowed; the default is `committedChanges`. Any thread.
    func documentChanges(of packID: Int64) -> UInt64
    /// Bytes the store holds back on its own file system for the writes that must land when it
    /// is full (SQLite's reserve file while it is allocated: 0 once a full disk released it);
    /// 0 where the store has no such room (PostgreSQL: the disk is the server's). Any thread.
    var reservedStorageBytes: Int64 { get }
    /// Checks an uploaded offline database (arbitrary bytes at `path`) before an import:
    /// precise `ImportError`s, nothing written but a scratch copy in `scratchDirectory`.
    func checkUpload(path: String, limits: UploadLimits, scratchDirectory: String) -> Result<any CheckedUpload, ImportError>
    /// Commits what is queued and stops the writer. Idempotent.
    func close()
}

extension PackStore {
    /// Every commit moves every pack's document count (true of any store; cluster mode keeps it,
    /// as another node's commit names no pack).
    public func documentChanges(of packID: Int64) -> UInt64 { committedChanges }
}
