import Foundation
import Loop
import Packs
import Postgres
import Store

/// Cluster mode's store: packd's facts in a PostgreSQL database shared by every node
/// (`PostgresSchema`), written by this node's one `PostgresWriterThread` in batches and read by
/// pooled connections on libuv's thread pool — the same roles and thread rules as `SQLiteStore`,
/// so Jobs and the API cannot tell the two apart. Completions hop to the loop thread.
///
/// What is the cluster's rather than the node's: event ids (a database sequence, in commit
/// order), the distinct-tile count and ambient size (counter slots summed over nodes), and
/// `committedChanges`, which also moves when another node commits (`noteRemoteCommit`, fed by
/// the node's `LISTEN` connection).
public final class PostgresStore: PackStore, @unchecked Sendable {
    public struct Configuration: Sendable {
        public var maximumBatchCount: Int
        public var maximumBatchDelay: Duration
        /// Versions kept per pack (`--keep-versions`) when this node cuts one.
        public var keepVersions: Int
        /// The server ends the writer's session after this long idle inside a transaction (a node
        /// frozen mid-batch would otherwise hold the rows it wrote, which other nodes' batches
        /// wait for): `PostgresConnection.endIdleTransactions`. nil: never.
        public var idleTransactionTimeout: Duration?

        public init(maximumBatchCount: Int = 256, maximumBatchDelay: Duration = .milliseconds(50), keepVersions: Int = 3,
                    idleTransactionTimeout: Duration? = nil) {
            self.maximumBatchCount = maximumBatchCount
            self.maximumBatchDelay = maximumBatchDelay
            self.keepVersions = max(1, keepVersions)
            self.idleTransactionTimeout = idleTransactionTimeout
        }
    }

    public let url: PostgresURL
    public let loop: EventLoop
    /// This node's id in `packd_nodes` (counter slot, lease owner).
    public let node: Int64
    /// The units this node holds, by the tiles they cover (the cluster scheduler fills it).
    public let units = WorkUnitAttribution()
    private let writer: PostgresWriterThread
    private let readers: PostgresReaderPool
    private let remoteChanges = RemoteChanges()
    /// Loop thread only.
    public var onCommit: ((BatchOutcome) -> Void)?

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
        let relay = CommitRelay()
        let keepVersions = configuration.keepVersions
        let idleTimeout = configuration.idleTransactionTimeout
        let connectWriter: @Sendable () throws -> PostgresStoreConnection = {
            let connection = try PostgresStoreConnection(url: url, node: node, applicationName: "packd-writer", units: units)
            connection.keepVersions = keepVersions
            connection.clock = clock
            if let idleTimeout { try connection.connection.endIdleTransactions(after: idleTimeout) }
            return connection
        }
        let first = try connectWriter()
        writer = PostgresWriterThread(
            connection: first, connect: connectWriter,
            configuration: .init(maximumBatchCount: configuration.maximumBatchCount,
                                 maximumBatchDelay: configuration.maximumBatchDelay),
            clock: clock) { outcome in
            onCommitOnWriter?(outcome)
            loop.execute { relay.store?.onCommit?(outcome) }
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
        relay.store = self
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
        let completion = LoopBound(then)
        writer.perform({ connection in try operation(connection) }, changesPacks: true) { result in
            loop.execute { completion.value(result) }
        }
    }

    /// `write` with cluster mode's own operations (work units) at hand.
    public func writeCluster<T: Sendable>(_ operation: @escaping @Sendable (PostgresStoreConnection) throws -> T,
                                          then: @escaping (Result<T, any Error>) -> Void) {
        let loop = loop
        let completion = LoopBound(then)
        writer.perform({ connection in try operation(connection) }, changesPacks: true) { result in
            loop.execute { completion.value(result) }
        }
    }

    public func readNow<T>(_ query: (any StoreReading) throws -> T) throws -> T {
        try readers.withReader(query)
    }

    /// This node's batches and operations, plus the commits other nodes announced.
    public var committedChanges: UInt64 { writer.committedChanges &+ remoteChanges.count }

    /// Another node committed (a notification on `CommitChannel` or `EventChannel`). Any thread.
    public func noteRemoteCommit() {
        remoteChanges.bump()
    }

    public func checkUpload(path: String, limits: UploadLimits, scratchDirectory: String) -> Result<any CheckedUpload, ImportError> {
        Result { () throws(ImportError) -> any CheckedUpload in
            try ValidatedImport.check(path: path, limits: limits, scratchDirectory: scratchDirectory)
        }
    }

    public func close() {
        writer.stop()
        readers.close()
    }

    // MARK: ResourceSink

    public func submit(_ writes: [ResourceWrite]) {
        writer.submit(contentsOf: writes)
    }

    public func inBatch<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                                     then: (@Sendable (Result<T, any Error>) -> Void)?) {
        let loop = loop
        let box = BatchResult<T>(then: then)
        writer.inBatch(PostgresWriterThread.BatchOperation(apply: { connection in
            box.result = Result { try connection.transaction { try operation(connection) } }
        }, finish: { batchError in
            box.deliver(batchError, on: loop)
        }, changesPacks: true))
    }

    public func whenCommitted(_ then: @escaping @Sendable () -> Void) {
        let loop = loop
        writer.whenCommitted { loop.execute(then) }
    }

    public func flush(_ then: @escaping @Sendable () -> Void) {
        let loop = loop
        writer.flush { loop.execute(then) }
    }

    public var pendingWrites: Int { writer.pendingWrites }

    /// Appends the event in the open batch, numbered by the database at the batch's commit
    /// (`event.id` is ignored: in cluster mode the database numbers every node's events).
    public func logEvent(_ event: StoredEvent, failed: @escaping @Sendable (any Error) -> Void) {
        writer.inBatch(PostgresWriterThread.BatchOperation(apply: { connection in
            do {
                try connection.queueEvent(event)
            } catch {
                failed(error)
            }
        }, finish: { batchError in
            if let batchError { failed(batchError) }
        }, changesPacks: false))
    }
}

/// The writer's commit callback is made before the store exists; this lets it reach the store.
private final class CommitRelay: @unchecked Sendable {
    weak var store: PostgresStore?
}

/// The readers' access callback is made before the writer exists.
private final class TouchRelay: @unchecked Sendable {
    weak var writer: PostgresWriterThread?
}

/// Commits of other nodes heard of, for `committedChanges`.
private final class RemoteChanges: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64 = 0

    var count: UInt64 { lock.withLock { value } }

    func bump() {
        lock.withLock { value &+= 1 }
    }
}

/// An in-batch operation's result, set on the writer thread (again if the batch is retried)
/// and handed to the caller's completion on the loop once the batch committed or failed.
private final class BatchResult<T: Sendable>: @unchecked Sendable {
    var result: Result<T, any Error>?
    private let then: (@Sendable (Result<T, any Error>) -> Void)?

    init(then: (@Sendable (Result<T, any Error>) -> Void)?) {
        self.then = then
    }

    func deliver(_ batchError: StoreError?, on loop: EventLoop) {
        guard let then else { return }
        let outcome: Result<T, any Error>
        if let batchError {
            outcome = .failure(batchError)
        } else {
            outcome = result ?? .failure(StoreError(.other, "the operation did not run"))
        }
        loop.execute { then(outcome) }
    }
}
