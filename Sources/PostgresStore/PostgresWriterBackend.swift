import Foundation
import Packs
import Postgres
import Writer

/// Cluster mode's side of the one writer: this node's blocking write connection (blocking libpq
/// on the writer thread, chosen by measurement: see `PostgresConnectionThread`). A batch that
/// loses a deadlock or a serialization conflict to another node, or whose connection broke, is
/// applied again from the start (on a new connection, after a short pause that grows) before it
/// is reported as failed: a database restart or a failover costs a pause, not failed packs.
/// The packs whose documents each batch or operation changed are what PostgreSQL's triggers
/// noted on this connection (`PostgresSchema.changedPacksMigration`, the counterpart of SQLite's
/// update hook), and every node hears of them (`CommitChannel`). Writer thread only, after `init`.
public final class PostgresWriterBackend: WriterBackend {
    public typealias Connection = PostgresStoreConnection
    typealias Connect = @Sendable () throws -> PostgresStoreConnection

    private var connection: PostgresStoreConnection?
    private let connect: Connect
    private let clock: WallClock
    /// Attempts of one batch when the connection breaks or a conflict aborts it.
    private let maximumAttempts: Int

    /// `connection` is the writer's first connection (made by the caller, so a failure to
    /// connect is the caller's error); `connect` makes the next one after it broke.
    init(connection: PostgresStoreConnection, connect: @escaping Connect, clock: WallClock, maximumAttempts: Int = 6) throws {
        try connection.noteChangedPacks()
        self.connection = connection
        self.connect = connect
        self.clock = clock
        self.maximumAttempts = max(1, maximumAttempts)
    }

    public func apply(_ batch: WriterBatch<PostgresStoreConnection>) -> BatchApplication {
        let (outcome, changedPacks) = applyRetrying(batch)
        return BatchApplication(outcome: outcome, operationsError: outcome.error, changedPacks: changedPacks)
    }

    /// Outside any batch: each store method the operation calls is its own transaction. What it
    /// changed is taken after it, whether it threw or not (its first transactions may have
    /// committed); when that cannot be read, any pack may have changed.
    public func perform(_ operation: (PostgresStoreConnection) throws -> Void, changesPacks: Bool) -> OperationReport {
        let connection: PostgresStoreConnection
        do {
            connection = try usableConnection()
        } catch {
            return OperationReport(error: error, changedPacks: [])
        }
        var failure: (any Error)?
        do {
            try operation(connection)
        } catch {
            failure = error
        }
        return OperationReport(error: failure, changedPacks: (try? connection.takeChangedPacks(notify: changesPacks)) ?? nil)
    }

    public func savepoint<T>(on connection: PostgresStoreConnection, _ body: () throws -> T) throws -> T {
        try connection.transaction(body)
    }

    public func writerStopped() {
        connection = nil
    }

    /// The connection, made again if it broke.
    private func usableConnection() throws -> PostgresStoreConnection {
        if let connection, connection.connection.isUsable { return connection }
        connection = nil
        let fresh = try connect()
        try fresh.noteChangedPacks()
        connection = fresh
        return fresh
    }

    /// One batch, applied again after a conflict or a broken connection until it commits or the
    /// attempts run out.
    private func applyRetrying(_ batch: WriterBatch<PostgresStoreConnection>) -> (BatchOutcome, Set<Int64>?) {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try usableConnection().applyBatch(batch.writes, operations: batch.operations, now: clock.now,
                                                         touches: batch.touches, changesPacks: batch.changesPacks)
            } catch {
                let postgres = error as? PostgresError
                let retryable = postgres.map { $0.isTransactionConflict || $0.isConnectionLost } ?? false
                    || connection?.connection.isUsable != true
                guard retryable, attempt < maximumAttempts else {
                    // Rolled back: nothing changed (the noted packs went with it).
                    return (PostgresStoreConnection.failedBatch(batch.writes, error), [])
                }
                Thread.sleep(forTimeInterval: min(2.0, 0.05 * Double(1 << min(attempt, 6))))
            }
        }
    }
}
