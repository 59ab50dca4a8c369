import Foundation
import Packs
import Postgres

/// Reading connections for the thread pool, as `StoreReaderPool` is for SQLite: each read checks
/// one out for its duration; connections are made on demand (at most one per pool thread reading
/// at once) and kept, except one that broke, which is dropped (the next read connects anew), until
/// `close()`.
final class PostgresReaderPool: @unchecked Sendable {
    private let connect: @Sendable () throws -> PostgresStoreConnection
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var idle: [PostgresStoreConnection] = []
    /// Reads under way (a connection checked out or being made), which `close()` waits for.
    private var running = 0
    private var closed = false

    /// What a read after `close()` throws.
    static let closedError = StoreError(.other, "the store is closed")

    init(connect: @escaping @Sendable () throws -> PostgresStoreConnection) {
        self.connect = connect
    }

    /// Runs `body` on a connection no other thread uses meanwhile, in one read-only transaction
    /// (a consistent snapshot for reads that take several statements). Call on a pool thread.
    /// Throws `closedError` once the pool is closed.
    ///
    /// An idle connection the server ended (a PostgreSQL restart) still says it is usable until a
    /// statement fails on it: a read that fails on a kept connection that turns out broken is
    /// tried once more on a new one, so a restart costs no read (a download would otherwise fetch
    /// what it failed to look up, stored or not).
    func withReader<T>(_ body: (PostgresStoreConnection) throws -> T) throws -> T {
        let (reader, kept) = try checkOut()
        do {
            defer { checkIn(reader) }
            return try read(body, on: reader)
        } catch let error as PostgresError where kept && (error.isConnectionLost || !reader.connection.isUsable) {
            let fresh = try checkOut(fresh: true).connection
            defer { checkIn(fresh) }
            return try read(body, on: fresh)
        }
    }

    private func read<T>(_ body: (PostgresStoreConnection) throws -> T, on reader: PostgresStoreConnection) throws -> T {
        try reader.connection.transaction(.repeatableRead) {
            try reader.query("SET TRANSACTION READ ONLY")
            return try body(reader)
        }
    }

    /// Refuses reads from now on (each throws `closedError`), waits for the reads under way and
    /// closes every connection (libpq's `PQfinish`, as the last reference goes). Idempotent. Not
    /// from inside `withReader`, which it would wait for.
    func close() {
        condition.lock()
        closed = true
        while running > 0 { condition.wait() }
        let connections = idle
        idle.removeAll()
        condition.unlock()
        _ = connections
    }

    /// A kept connection (`kept`) or a new one (always with `fresh`); counted as running until
    /// checked in.
    private func checkOut(fresh: Bool = false) throws -> (connection: PostgresStoreConnection, kept: Bool) {
        condition.lock()
        guard !closed else {
            condition.unlock()
            throw Self.closedError
        }
        running += 1
        while !fresh, let reader = idle.popLast() {
            if reader.connection.isUsable {
                condition.unlock()
                return (reader, true)
            }
        }
        condition.unlock()
        do {
            return (try connect(), false)
        } catch {
            finishRead()
            throw error
        }
    }

    /// Keeps `reader` when it still works and the pool is open; the read is over.
    private func checkIn(_ reader: PostgresStoreConnection) {
        condition.lock()
        if reader.connection.isUsable, !reader.connection.isInTransaction, !closed { idle.append(reader) }
        condition.unlock()
        finishRead()
    }

    private func finishRead() {
        condition.lock()
        running -= 1
        if closed { condition.broadcast() }
        condition.unlock()
    }
}
