import Loop
import Packs
import Writer

/// The embedded store (packd's default): one SQLite file in WAL mode — MapLibre's offline schema
/// beside packd's own tables — written by the one `WriterThread` (the `BatchingWriter` on the
/// `SQLiteWriterBackend`) and read by pooled read-only connections on libuv's thread pool. Every
/// completion hops to the loop thread.
public final class SQLiteStore: PackStore, WriterSink, @unchecked Sendable {
    public let path: String
    public let loop: EventLoop
    /// The writer (tests and benchmarks drive it directly; the server only through `PackStore`).
    public let writer: WriterThread
    private let readers: StoreReaderPool
    /// The download engine (`PackStore.commitListener`). Loop thread only.
    public weak var commitListener: (any CommittedBatchListener)?

    /// Opens (creating or migrating) the database at `path`. `onCommitOnWriter` hears each
    /// outcome on the writer thread first (metrics that need no loop hop).
    public init(path: String, loop: EventLoop, configuration: WriterThread.Configuration = .init(),
                onCommitOnWriter: (@Sendable (BatchOutcome) -> Void)? = nil) throws {
        self.path = path
        self.loop = loop
        let relay = CommitRelay<SQLiteStore>()
        writer = try WriterThread(path: path, configuration: configuration) { outcome in
            onCommitOnWriter?(outcome)
            loop.execute { relay.owner?.commitListener?.committed(outcome) }
        }
        // Strong, not weak: no cycle (the writer never sees the readers), a read `close` is
        // waiting for only records a touch nobody commits, and a weak reference would give the
        // writer a side table that LeakSanitizer reports as leaked whenever `packd serve` exits
        // while the writer thread is still letting go of it (the runtime keeps the side table's
        // address encoded in the object's reference count; see scripts/sanitizers/leak.supp).
        readers = StoreReaderPool(path: path, onAccess: { [writer] key, id in
            switch key {
            case .tile: writer.touch(tileID: id)
            case .resource: writer.touch(resourceID: id)
            }
        })
        relay.owner = self
    }

    // MARK: PackStore

    public func read<T: Sendable>(_ query: @escaping @Sendable (any StoreReading & PackExporting) throws -> T,
                                  then: @escaping (Result<T, any Error>) -> Void) {
        let readers = readers
        loop.runOnThreadPool({ Result { try readers.withReader(query) }.mapError(Self.neutral) }, then: then)
    }

    public func write<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                                   then: @escaping (Result<T, any Error>) -> Void) {
        let loop = loop
        let completion = LoopBound(then, loop: loop)
        // No transaction around the whole operation: each store method is one (an import must
        // ATTACH its upload outside any).
        writer.perform({ database in try operation(database) }) { result in
            let result = result.mapError(Self.neutral)
            loop.execute { completion.value(result) }
        }
    }

    /// SQLite's errors in the store-neutral form callers outside Store act on (a full disk).
    static func neutral(_ error: any Error) -> any Error {
        (error as? DatabaseError)?.storeError ?? error
    }

    public func readNow<T>(_ query: (any StoreReading) throws -> T) throws -> T {
        try readers.withReader(query)
    }

    public var committedChanges: UInt64 { writer.committedChanges }
    public var reservedStorageBytes: Int64 { writer.backend.reservedStorageBytes }

    /// Per pack, from the rows SQLite reports each batch changed (`PackRowChanges`).
    public func documentChanges(of packID: Int64) -> UInt64 { writer.documentChanges(of: packID) }

    public func checkUpload(path: String, limits: UploadLimits, scratchDirectory: String) -> Result<any CheckedUpload, ImportError> {
        ValidatedImport.checkUpload(path: path, limits: limits, scratchDirectory: scratchDirectory)
    }

    /// Closes the store: the writer commits what it holds and stops (its checkpointer's
    /// connection closes with it), the readers' connections close (reads under way are
    /// interrupted and waited for; later ones throw `StoreReaderPool.closedError`), and the
    /// writer's connection closes last, taking the `-wal` and `-shm` files with it. Idempotent.
    public func close() {
        writer.stop()
        readers.close()
        writer.backend.closeConnection()
    }

    // MARK: ResourceSink (the rest is `WriterSink`'s)

    public func deliver(_ work: @escaping @Sendable () -> Void) {
        loop.execute(work)
    }

    public func storeError(_ error: any Error) -> any Error { Self.neutral(error) }

    /// Appends an event to the durable log in the open batch; it changes no pack document.
    /// `failed` hears once, after the batch: its own error, or the batch's. (A batch a full disk
    /// refused applies its operations a second time, alone: only the last attempt counts.)
    public func logEvent(_ event: StoredEvent, failed: @escaping @Sendable (any Error) -> Void) {
        writer.inBatch(changesPacks: false, savepoint: { database in
            _ = try database.appendEvent(id: event.id, packID: event.packID, type: event.type, json: event.json, now: event.createdAt)
        }, then: { result in
            if case .failure(let error) = result { failed(Self.neutral(error)) }
        })
    }
}
