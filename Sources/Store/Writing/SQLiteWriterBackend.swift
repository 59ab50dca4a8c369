import Foundation
import Packs
import Writer

/// SQLite mode's side of the one writer: the read-write connection (`OfflineDatabase`), the
/// checkpoint thread beside it, the update hook that names the packs a batch changed
/// (`PackRowChanges`), and the storage reserve that lets the facts of a full disk land
/// (`StorageReserve`). Writer thread only, after `init`.
public final class SQLiteWriterBackend: WriterBackend {
    public typealias Connection = OfflineDatabase

    let store: OfflineDatabase
    let checkpointer: WALCheckpointer
    private let clock: WallClock
    private let rowChanges: PackRowChanges
    private let reserve: StorageReserve
    /// Bytes the reserve file holds on the database's file system now. Any thread.
    public var reservedStorageBytes: Int64 { reserve.heldBytes }
    private var lastLogTruncation: ContinuousClock.Instant?
    private static let truncateInterval: Duration = .seconds(5)

    /// Opens (creating/migrating) the database at `path`, attaches the checkpointer and holds the
    /// reserve (a disk too full for it is treated as full from the start).
    public init(path: String, configuration: Configuration) throws {
        store = try OfflineDatabase(path: path, pageSize: configuration.pageSize)
        store.clock = configuration.clock
        store.keepVersions = max(1, configuration.keepVersions)
        clock = configuration.clock
        checkpointer = try WALCheckpointer(path: path)
        checkpointer.attach(to: store.database)
        rowChanges = PackRowChanges(database: store.database)
        reserve = StorageReserve(databasePath: path, bytes: configuration.storageReserveBytes)
        reserve.hold()
    }

    /// Commits the batch's writes and the operations riding it in one transaction. On a full
    /// disk (`StorageReserve`): the batch that meets it is rolled back and the reserve released,
    /// and its operations (state changes, failures, events) are applied again alone, in the room
    /// the reserve held; until the file system has room again, writes are refused without
    /// touching it and operations are committed alone. Access times are not worth the reserve's
    /// room: dropped while the disk is full.
    public func apply(_ batch: WriterBatch<OfflineDatabase>) -> BatchApplication {
        let now = clock.now
        var outcome: BatchOutcome
        var operationsError: StoreError?
        if batch.writes.isEmpty && batch.operations.isEmpty && !reserve.isHeld {
            outcome = BatchOutcome()
        } else if batch.writes.isEmpty || regainReserve() {
            let held = reserve.isHeld
            outcome = store.apply(batch.writes, operations: batch.operations, now: now,
                                  touches: held ? batch.touches : AccessTouches())
            operationsError = outcome.error
            if let error = outcome.error, error.isStorageFull, held {
                reserve.release()
                if !batch.operations.isEmpty {
                    operationsError = store.apply([], operations: batch.operations, now: now).error
                }
            }
        } else {
            outcome = BatchOutcome()
            outcome.error = StoreError(.storageFull, diskFullMessage)
            outcome.failedPackIDs = Set(batch.writes.compactMap(\.packID))
            if !batch.operations.isEmpty {
                operationsError = store.apply([], operations: batch.operations, now: now).error
            }
        }
        return BatchApplication(outcome: outcome, operationsError: operationsError, changedPacks: rowChanges.take())
    }

    /// What an operation touched is not read from the hook alone (see `PackRowChanges`), but it
    /// is reported: the writer moves every pack unless the operation promised otherwise.
    public func perform(_ operation: (OfflineDatabase) throws -> Void, changesPacks: Bool) -> OperationReport {
        var failure: (any Error)?
        do {
            try operation(store)
        } catch {
            if Self.isStorageFull(error) { reserve.release() }
            failure = error
        }
        return OperationReport(error: failure, changedPacks: rowChanges.take())
    }

    public func savepoint<T>(on connection: OfflineDatabase, _ body: () throws -> T) throws -> T {
        try connection.database.transaction { try body() }
    }

    /// The writer thread is gone after this: its connection may be touched by the checkpointer.
    public func writerStopped() {
        checkpointer.detach(from: store.database)
        checkpointer.stop()
    }

    /// Closes the writer's connection (`Database.close`) once the writer has stopped — after the
    /// store's readers, so that it is the last connection to close: a read-write one checkpoints
    /// the log and removes `-wal` and `-shm`, which a read-only one may not. Idempotent.
    public func closeConnection() {
        store.database.close()
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

    /// Why writes are refused while the disk is full.
    private var diskFullMessage: String {
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
}
