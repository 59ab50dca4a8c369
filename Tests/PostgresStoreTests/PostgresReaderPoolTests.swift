import Foundation
import Packs
import PackdTestSupport
import Postgres
import Testing
@testable import PostgresStore

/// Cluster mode's reading connections: `close()` refuses new reads and waits for those under way
/// (as `StoreReaderPool.close()` does for SQLite), and a kept connection the server ended — every
/// idle one, after a PostgreSQL restart — costs no read.
@Suite struct PostgresReaderPoolTests {
    static func pool(_ database: ClusterDatabase) -> PostgresReaderPool {
        PostgresReaderPool { try PostgresStoreConnection(url: database.url, node: 0, applicationName: "packd-reader") }
    }

    @Test func closeRefusesNewReadsAndWaitsForTheRunningOnes() throws {
        let database = try ClusterDatabase("readers_close")
        let pool = Self.pool(database)
        let started = DispatchSemaphore(value: 0)
        let finished = Flag()
        Thread {
            _ = try? pool.withReader { reader in
                started.signal()
                _ = try reader.connection.query("SELECT pg_sleep(0.5)")
                finished.set()
            }
        }.start()
        started.wait()
        pool.close()
        #expect(finished.isSet, "close() returned while a read was under way")
        #expect(throws: StoreError.self) { try pool.withReader { _ in 1 } }
    }

    @Test func aKeptConnectionTheServerEndedCostsNoRead() throws {
        let database = try ClusterDatabase("readers_restart")
        let pool = Self.pool(database)
        defer { pool.close() }
        let first = try pool.withReader { $0.connection.backendProcessID }
        // As a restart does: the server ends the session; the pool's idle connection does not know.
        let admin = try database.connect("admin")
        #expect(try admin.query("SELECT pg_terminate_backend($1::int4)", [.int8(Int64(first))]).first?.bool(0) == true)
        #expect(eventually {
            (try? admin.scalarInt("SELECT count(*)::int8 FROM pg_stat_activity WHERE pid = $1::int4", [.int8(Int64(first))])) == 0
        })
        let second = try pool.withReader { $0.connection.backendProcessID }
        #expect(second != first)
        #expect(try pool.withReader { $0.connection.backendProcessID } == second, "the new connection is kept")
    }
}

private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
