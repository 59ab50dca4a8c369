import Foundation
import Packs
import Postgres

/// Reading connections for the thread pool, as `StoreReaderPool` is for SQLite: each read checks
/// one out for its duration; connections are made on demand (at most one per pool thread reading
/// at once) and kept, except one that broke, which is dropped (the next read connects anew).
final class PostgresReaderPool: @unchecked Sendable {
    private let connect: @Sendable () throws -> PostgresStoreConnection
    private let lock = NSLock()
    // Guarded by `lock`.
    private var idle: [PostgresStoreConnection] = []
    private var closed = false

    init(connect: @escaping @Sendable () throws -> PostgresStoreConnection) {
        self.connect = connect
    }

    /// Runs `body` on a connection no other thread uses meanwhile, in one read-only transaction
    /// (a consistent snapshot for reads that take several statements). Call on a pool thread.
    func withReader<T>(_ body: (PostgresStoreConnection) throws -> T) throws -> T {
        let reader = try checkOut()
        defer { checkIn(reader) }
        return try reader.connection.transaction(.repeatableRead) {
            try reader.query("SET TRANSACTION READ ONLY")
            return try body(reader)
        }
    }

    private func checkOut() throws -> PostgresStoreConnection {
        if let reader = lock.withLock({ idle.popLast() }), reader.connection.isUsable { return reader }
        return try connect()
    }

    private func checkIn(_ reader: PostgresStoreConnection) {
        guard reader.connection.isUsable else { return }
        lock.withLock {
            if !closed { idle.append(reader) }
        }
    }

    /// Closes the idle connections; later reads still connect (shutdown is the writer's).
    func close() {
        let connections = lock.withLock { () -> [PostgresStoreConnection] in
            closed = true
            defer { idle.removeAll() }
            return idle
        }
        _ = connections
    }
}
