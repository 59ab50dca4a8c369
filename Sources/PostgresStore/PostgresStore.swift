import Foundation
import Loop
import Packs
import Postgres
import Store
import Writer

/// Cluster mode's store: packd's facts in a PostgreSQL database shared by every node
/// (`PostgresSchema`), written by this node's one `BatchingWriter` (on a `PostgresWriterBackend`)
/// in batches and read by pooled connections on libuv's thread pool — the same roles and thread
/// rules as `SQLiteStore`, so Jobs and the API cannot tell the two apart. Completions hop to the
/// loop thread. `Store` is imported for MapLibre files only (checking, merging, exporting them).
///
/// What is the cluster's rather than the node's: event ids (a database sequence, in commit
/// order), the distinct-tile count and ambient size (counter slots summed over nodes), and the
/// change counts (`committedChanges`, `documentChanges(of:)`), which also move for the packs
/// another node changed (`noteRemoteCommit`, fed by the node's `LISTEN` connection).
public final class PostgresStore: PackStore, WriterSink, @unchecked Sendable {
    public struct Configuration: Sendable {
        public var maximumBatchCount: Int
        public var maximumBatchDelay: Duration
        /// Versions kept per pack (`--keep-versions`) when this node cuts one.
        public var keepVersions: Int

        public init(maximumBatchCount: Int = 256, maximumBatchDelay: Duration = .milliseconds(50), keepVersions: Int = 3) {
            self.maximumBatchCount = maximumBatchCount
            self.maximumBatchDelay = maximumBatchDelay
            self.keepVersions = max(1, keepVersions)
        }
    }

    public let url: PostgresURL
    public let loop: EventLoop
    /// This node's id in `packd_nodes` (counter slot, lease owner).
    public let node: Int64
    /// The units this node holds, by the tiles they cover (the cluster scheduler fills it).
    public let units = WorkUnitAttribution()
    /// The writer (tests drive it directly; the server only through `PackStore`).
    public let writer: BatchingWriter<PostgresWriterBackend>
    private let readers: PostgresReaderPool
    /// Commits of other nodes heard of.
    private let remoteChanges = LockedValue(PackChangeMarks(capacity: BatchingWriter<PostgresWriterBackend>.maximumPackMarks))
    /// The download engine (`PackStore.commitListener`). Loop thread only.
    public weak var commitListener: (any CommittedBatchListener)?

    /// Connects (blocking: call before the loop runs), migrates the schema, joins the cluster
    /// (registers this process in the node table, as `nodeName`; see `ClusterNodes`) and starts
    /// the writer.
    public init(url: PostgresURL, loop: EventLoop, nodeName: String = "packd-\(getpid())", version: String = "",
                configuration: Configuration = .init(), clock: WallClock = .system,
                onCommitOnWriter: (@Sendable (BatchOutcome) -> Void)? = nil) throws {
        self.url = url
        self.loop = loop
        let migration = try PostgresConnection(url: url, applicationName: "packd-migration")
        try PostgresSchemaMigrator().migrate(migration)
        let node = try ClusterNodes().register(name: nodeName, listenAddress: "", version: version, on: migration)
        self.node = node
        let units = units
        let relay = CommitRelay<PostgresStore>()
        let keepVersions = configuration.keepVersions
        let connectWriter: @Sendable () throws -> PostgresStoreConnection = {
            let connection = try PostgresStoreConnection(url: url, node: node, applicationName: "packd-writer", units: units)
            connection.keepVersions = keepVersions
            connection.clock = clock
            return connection
        }
        let first = try connectWriter()
        writer = BatchingWriter(
            backend: try PostgresWriterBackend(connection: first, connect: connectWriter, clock: clock),
            limits: BatchLimits(maximumBatchCount: configuration.maximumBatchCount,
                                maximumBatchDelay: configuration.maximumBatchDelay),
            threadName: "packd-pg-writer") { outcome in
            onCommitOnWriter?(outcome)
            loop.execute { relay.owner?.commitListener?.committed(outcome) }
        }
        let touch = TouchRelay()
        readers = PostgresReaderPool {
            try PostgresStoreConnection(url: url, node: node, applicationName: "packd-reader", onAccess: { key, id in
                switch key {
                case .tile: touch.writer?.touch(tileID: id)
                case .resource: touch.writer?.touch(resourceID: id)
                }
            })
        }
        touch.writer = writer
        relay.owner = self
    }

    // MARK: PackStore

    public func read<T: Sendable>(_ query: @escaping @Sendable (any StoreReading & PackExporting) throws -> T,
                                  then: @escaping (Result<T, any Error>) -> Void) {
        let readers = readers
        loop.runOnThreadPool({ Result { try readers.withReader(query) } }, then: then)
    }

    public func write<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                                   then: @escaping (Result<T, any Error>) -> Void) {
        let loop = loop
        let completion = LoopBound(then, loop: loop)
        writer.perform({ connection in try operation(connection) }) { result in
            loop.execute { completion.value(result) }
        }
    }

    /// `write` with cluster mode's own operations (work units) at hand.
    public func writeCluster<T: Sendable>(_ operation: @escaping @Sendable (PostgresStoreConnection) throws -> T,
                                          then: @escaping (Result<T, any Error>) -> Void) {
        let loop = loop
        let completion = LoopBound(then, loop: loop)
        writer.perform({ connection in try operation(connection) }) { result in
            loop.execute { completion.value(result) }
        }
    }

    public func readNow<T>(_ query: (any StoreReading) throws -> T) throws -> T {
        try readers.withReader(query)
    }

    /// This node's batches and operations, plus the commits other nodes announced.
    public var committedChanges: UInt64 { writer.committedChanges &+ remoteChanges.withLock { $0.count } }
    /// PostgreSQL's disk is the server's: packd holds no room on it.
    public var reservedStorageBytes: Int64 { 0 }

    /// Per pack: what this node's writer changed (PostgreSQL's triggers name the packs, see
    /// `PostgresWriterBackend`), plus what other nodes announced for it. A sum of two counts
    /// that never go back, so it never goes back either, and moves when either does.
    public func documentChanges(of packID: Int64) -> UInt64 {
        writer.documentChanges(of: packID) &+ remoteChanges.withLock { $0.value(of: packID) }
    }

    /// Another node committed changes to `packs` (`CommitChannel`), or to any pack (nil: a
    /// notification that names none, or notifications that may have been missed). Any thread.
    public func noteRemoteCommit(packs: Set<Int64>? = nil) {
        remoteChanges.withLock { marks in
            if let packs { marks.mark(packs) } else { marks.markEveryPack() }
        }
    }

    public func checkUpload(path: String, limits: UploadLimits, scratchDirectory: String) -> Result<any CheckedUpload, ImportError> {
        ValidatedImport.checkUpload(path: path, limits: limits, scratchDirectory: scratchDirectory)
    }

    public func close() {
        writer.stop()
        readers.close()
    }

    // MARK: ResourceSink (the rest is `WriterSink`'s)

    public func deliver(_ work: @escaping @Sendable () -> Void) {
        loop.execute(work)
    }

    /// Appends the event in the open batch, numbered by the database at the batch's commit
    /// (`event.id` is ignored: in cluster mode the database numbers every node's events).
    public func logEvent(_ event: StoredEvent, failed: @escaping @Sendable (any Error) -> Void) {
        writer.inBatch(.reporting(changesPacks: false, { connection in try connection.queueEvent(event) }, then: { result in
            if case .failure(let error) = result { failed(error) }
        }))
    }
}

/// The readers' access callback is made before the writer exists.
private final class TouchRelay: @unchecked Sendable {
    weak var writer: BatchingWriter<PostgresWriterBackend>?
}

/// A value behind a lock (the loop marks, any thread reads).
private final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.withLock { body(&value) }
    }
}
