import Foundation
import Testing
@testable import Store

@Suite struct WALCheckpointerTests {
    /// A writer connection like the `WriterThread`'s, with a scratch table of blobs.
    func makeWriter(_ path: String) throws -> Database {
        let writer = try SchemaMigrator.openWriter(path: path)
        try writer.execute("CREATE TABLE blobs (data BLOB NOT NULL)")
        return writer
    }

    /// Writes `transactions` transactions of `rows` incompressible 4 KiB blobs each.
    func write(_ writer: Database, transactions: Int, rows: Int = 64) throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<transactions {
            try writer.transaction {
                for _ in 0..<rows {
                    let blob = (0..<512).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64, Array.init) }
                    try writer.execute("INSERT INTO blobs (data) VALUES (?1)", [.blob(blob)])
                }
            }
        }
    }

    func walSize(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
    }

    @Test func theWriterOnlyAppendsAndTheCheckpointerKeepsTheLogBounded() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("c.db")
        let writer = try makeWriter(path)
        let checkpointer = try WALCheckpointer(path: path, startBytes: 64 << 10, maximumBytes: 1 << 20)
        checkpointer.attach(to: writer)
        // 40 MiB through a log allowed 1 MiB: it restarts instead of growing, and the file
        // only ever holds the bound plus the one transaction that crossed it.
        try write(writer, transactions: 160)
        let rounds = checkpointer.rounds
        checkpointer.detach(from: writer)
        checkpointer.stop()
        #expect(rounds >= 20)
        #expect(walSize(path) <= (1 << 20) + 64 * 4 * 4120 + 65_536, "WAL \(walSize(path)) bytes")
        let reader = try StoreReader(path: path)
        #expect(try reader.database.scalarInt("SELECT count(*) FROM blobs") == 160 * 64)
        #expect(try reader.database.scalarInt("SELECT sum(length(data)) FROM blobs") == 160 * 64 * 4096)
        #expect(try reader.database.scalarString("PRAGMA integrity_check") == "ok")
    }

    /// Attaching turns the writer's own automatic checkpoint off: with the checkpointer's thread
    /// stopped, nothing copies the log back and it grows past SQLite's 1,000-page threshold.
    @Test func attachingTakesTheCheckpointsOffTheWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("c.db")
        let writer = try makeWriter(path)
        let checkpointer = try WALCheckpointer(path: path)
        checkpointer.stop()
        checkpointer.attach(to: writer)
        try write(writer, transactions: 24)
        #expect(walSize(path) > 6 << 20)
        #expect(checkpointer.rounds == 0)
        // Detached, the writer checkpoints by itself again at its next commit.
        checkpointer.detach(from: writer)
        try write(writer, transactions: 1)
        let reader = try StoreReader(path: path)
        #expect(try reader.database.scalarInt("SELECT count(*) FROM blobs") == 25 * 64)
    }

    /// A reader holding an old snapshot keeps rounds from catching up: the writer waits at most
    /// `maximumWait` per commit and carries on (the log grows), rather than stalling for good.
    @Test(.timeLimit(.minutes(1)))
    func aPinnedSnapshotSlowsTheWriterButNeverStopsIt() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("c.db")
        let writer = try makeWriter(path)
        let checkpointer = try WALCheckpointer(path: path, startBytes: 64 << 10, maximumBytes: 512 << 10, maximumWait: 0.1)
        checkpointer.attach(to: writer)
        defer {
            checkpointer.detach(from: writer)
            checkpointer.stop()
        }
        try write(writer, transactions: 1)
        let reader = try Database(path: path, mode: .readOnly)
        try reader.execute("BEGIN")
        #expect(try reader.scalarInt("SELECT count(*) FROM blobs") == 64)
        try write(writer, transactions: 8)
        #expect(walSize(path) > 2 << 20)
        #expect(try reader.scalarInt("SELECT count(*) FROM blobs") == 64)
        try reader.execute("COMMIT")
        try write(writer, transactions: 1)
        #expect(try reader.scalarInt("SELECT count(*) FROM blobs") == 10 * 64)
    }
}
