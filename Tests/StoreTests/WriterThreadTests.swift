import Foundation
import Packs
import Testing
@testable import Store

/// Values handed over by callbacks on other threads (the writer's commits, readers' results), in
/// order; `wait` polls a condition with a deadline (no sleeps as sync).
final class Recorded<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var values: [Value] = []

    func record(_ value: Value) {
        condition.lock()
        values.append(value)
        condition.broadcast()
        condition.unlock()
    }

    var all: [Value] {
        condition.lock()
        defer { condition.unlock() }
        return values
    }

    /// Waits until `predicate` holds over the values so far, or 30 s pass.
    @discardableResult
    func wait(until predicate: ([Value]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(values) {
            if !condition.wait(until: deadline) { return predicate(values) }
        }
        return true
    }
}

final class Signal: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func fire() { semaphore.signal() }
    func wait() -> Bool { semaphore.wait(timeout: .now() + 30) == .success }
    /// Yields for a moment while polling a condition (never relied on as synchronisation).
    func waitBriefly() -> Bool { semaphore.wait(timeout: .now() + .milliseconds(2)) == .success }
}

@Suite struct WriterThreadTests {
    func makePack(_ writer: WriterThread, _ name: String) throws -> Int64 {
        let done = Signal()
        let box = ResultBox()
        writer.perform({ try $0.createPack(StoreFixtures.pack(name), now: 1) }, completion: { box.id = try? $0.get(); done.fire() })
        #expect(done.wait())
        return try #require(box.id)
    }

    final class ResultBox: @unchecked Sendable { var id: Int64? }

    @Test func commitsFullBatchesByCountInOneTransactionEach() throws {
        let directory = TemporaryDirectory()
        let log = Recorded<BatchOutcome>()
        // A long delay: only the count (or flush) can commit.
        let writer = try WriterThread(path: directory.file("w.db"),
                                      configuration: .init(maximumBatchCount: 10, maximumBatchDelay: .seconds(3600)),
                                      onCommit: log.record)
        defer { writer.stop() }
        let pack = try makePack(writer, "p")
        writer.submit(contentsOf: try (0..<25).map { try StoreFixtures.tile(z: 5, x: Int64($0), y: 0, pack: pack) })
        #expect(log.wait { $0.count == 2 })
        #expect(log.all.map(\.appliedWrites) == [10, 10])
        #expect(log.all.last?.progress[pack]?.completedTiles == 20)

        let flushed = Signal()
        writer.flush { flushed.fire() }
        #expect(flushed.wait())
        #expect(log.all.map(\.appliedWrites) == [10, 10, 5])
        #expect(try StoreReader(path: directory.file("w.db")).progress(pack)?.completedTiles == 25)
    }

    @Test func whenCommittedWaitsForTheBatchWithoutCuttingItShort() throws {
        let directory = TemporaryDirectory()
        let log = Recorded<BatchOutcome>()
        let writer = try WriterThread(path: directory.file("w.db"),
                                      configuration: .init(maximumBatchCount: 10, maximumBatchDelay: .seconds(3600)),
                                      onCommit: log.record)
        defer { writer.stop() }
        let pack = try makePack(writer, "p")
        let committed = Signal()
        writer.submit(contentsOf: try (0..<4).map { try StoreFixtures.tile(z: 5, x: Int64($0), y: 0, pack: pack) })
        writer.whenCommitted { committed.fire() }
        writer.submit(contentsOf: try (4..<8).map { try StoreFixtures.tile(z: 5, x: Int64($0), y: 0, pack: pack) })
        // Eight writes in a batch of ten with an hour's delay: nothing commits, nothing fires.
        #expect(!committed.waitBriefly())
        #expect(log.all.isEmpty)
        writer.submit(contentsOf: try (8..<10).map { try StoreFixtures.tile(z: 5, x: Int64($0), y: 0, pack: pack) })
        // The tenth write fills the batch: one full batch, then the callback.
        #expect(committed.wait())
        #expect(log.all.map(\.appliedWrites) == [10])
        // With nothing pending it answers at once.
        let idle = Signal()
        writer.whenCommitted { idle.fire() }
        #expect(idle.wait())
    }

    @Test func commitsAPartialBatchWhenItsTimeIsUp() throws {
        let directory = TemporaryDirectory()
        let log = Recorded<BatchOutcome>()
        let writer = try WriterThread(path: directory.file("w.db"),
                                      configuration: .init(maximumBatchCount: 1000, maximumBatchDelay: .milliseconds(20)),
                                      onCommit: log.record)
        defer { writer.stop() }
        writer.submit(try StoreFixtures.tile(z: 1, x: 0, y: 0, pack: nil))
        writer.submit(try StoreFixtures.tile(z: 1, x: 1, y: 0, pack: nil))
        // No flush: the 20 ms timer alone must commit both, in one batch.
        #expect(log.wait { $0.reduce(0) { $0 + $1.appliedWrites } == 2 })
        #expect(log.all.count == 1)
    }

    @Test func operationsRunInOrderWithWritesAndStopCommitsTheRest() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("w.db")
        let log = Recorded<BatchOutcome>()
        let writer = try WriterThread(path: path, configuration: .init(maximumBatchCount: 1000, maximumBatchDelay: .seconds(3600)),
                                      onCommit: log.record)
        let pack = try makePack(writer, "p")
        writer.submit(try StoreFixtures.tile(z: 1, x: 0, y: 0, pack: pack))
        // The operation must see the write submitted before it.
        let seen = ResultBox()
        let done = Signal()
        writer.perform({ try $0.progress(pack).completedTiles }, completion: { seen.id = try? $0.get(); done.fire() })
        #expect(done.wait())
        #expect(seen.id == 1)
        writer.submit(try StoreFixtures.tile(z: 1, x: 1, y: 0, pack: pack))
        writer.stop()
        #expect(try StoreReader(path: path).progress(pack)?.completedTiles == 2)
    }

    /// A writer on a fake clock (at 100) holding `write`, and a reader whose reads touch it.
    final class TouchFixture {
        let directory = TemporaryDirectory()
        let clock = Clock()
        let log = Recorded<BatchOutcome>()
        let writer: WriterThread
        let reader: StoreReader

        init(_ write: ResourceWrite) throws {
            let path = directory.file("w.db")
            writer = try WriterThread(path: path, configuration: .init(maximumBatchCount: 1, maximumBatchDelay: .milliseconds(5), clock: WallClock(clock.now)),
                                      onCommit: log.record)
            writer.submit(write)
            #expect(log.wait { $0.count == 1 })
            reader = try StoreReader(path: path, onAccess: { [writer] key, id in
                if key.isTile { writer.touch(tileID: id) } else { writer.touch(resourceID: id) }
            })
        }

        deinit { writer.stop() }
    }

    @Test func readsTouchAccessedInTheNextCommit() throws {
        let write = try StoreFixtures.tile(z: 2, x: 1, y: 1, pack: nil)
        let fixture = try TouchFixture(write)
        fixture.clock.value = 500
        let row = try #require(try fixture.reader.resource(write.key))
        #expect(row.accessed == 100)
        guard case .body(let body) = write.content else { return }
        #expect(row.body == body)
        let flushed = Signal()
        fixture.writer.submit(try StoreFixtures.tile(z: 2, x: 0, y: 0, pack: nil))
        fixture.writer.flush { flushed.fire() }
        #expect(flushed.wait())
        #expect(try fixture.reader.resource(write.key)?.accessed == 500)
    }

    @Test func touchesAreAppliedWithoutAnyWriteAfterTheBatchDelay() throws {
        let write = try StoreFixtures.resource("https://example/r.json", pack: nil, text: "{}")
        let fixture = try TouchFixture(write)
        fixture.clock.value = 900
        #expect(try fixture.reader.resource(write.key)?.accessed == 100)
        // No further write or flush: the pending touch alone must reach the database.
        let deadline = Date().addingTimeInterval(30)
        while try fixture.reader.resource(write.key)?.accessed != 900 && Date() < deadline {
            _ = Signal().waitBriefly()
        }
        #expect(try fixture.reader.resource(write.key)?.accessed == 900)
    }

    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var current: Int64 = 100
        var value: Int64 {
            get { lock.lock(); defer { lock.unlock() }; return current }
            set { lock.lock(); current = newValue; lock.unlock() }
        }
        var now: @Sendable () -> Int64 { { [self] in value } }
    }

    /// Stopped and dropped, a writer and its checkpointer go, and their connections with them
    /// (each kept a Thread that kept them: five file descriptors a writer, leaked).
    @Test func aStoppedWriterIsReleasedWithItsCheckpointer() throws {
        let directory = TemporaryDirectory()
        weak var released: WriterThread?
        weak var releasedCheckpointer: WALCheckpointer?
        do {
            let writer = try WriterThread(path: directory.file("w.db"), onCommit: { _ in })
            released = writer
            releasedCheckpointer = writer.checkpointer
            writer.stop()
        }
        // The threads drop their last references as they exit, just after `stop` returns.
        let deadline = Date().addingTimeInterval(30)
        while (released != nil || releasedCheckpointer != nil) && Date() < deadline { _ = Signal().waitBriefly() }
        #expect(released == nil)
        #expect(releasedCheckpointer == nil)
    }
}

@Suite struct WriterPageSizeTests {
    /// Tile bodies around the page boundaries of both sizes: in the leaf, just over a page, a
    /// few overflow pages.
    static let bodySizes = [300, 4_000, 4_097, 16_300, 16_385, 22_903, 70_000]

    func storeAndReadBack(path: String, configuration: WriterThread.Configuration) throws -> Int? {
        let writer = try WriterThread(path: path, configuration: configuration, onCommit: { _ in })
        let done = Signal()
        let box = WriterThreadTests.ResultBox()
        writer.perform({ try $0.createPack(StoreFixtures.pack(UUID().uuidString), now: 1) }, completion: { box.id = try? $0.get(); done.fire() })
        #expect(done.wait())
        let pack = try #require(box.id)
        let writes = try Self.bodySizes.enumerated().map { index, size in
            try StoreFixtures.tile(z: 14, x: Int64(index), y: 7, pack: pack, size: size, seed: UInt64(size))
        }
        writer.submit(contentsOf: writes)
        let flushed = Signal()
        writer.flush { flushed.fire() }
        #expect(flushed.wait())
        writer.stop()
        let reader = try StoreReader(path: path)
        for write in writes {
            guard case .body(let expected) = write.content else { Issue.record("not a body"); continue }
            let stored = try #require(try reader.resource(write.key, linkedTo: pack))
            #expect(try stored.body?.decoded() == expected.decoded())
        }
        return try reader.database.scalarInt("PRAGMA page_size").map(Int.init)
    }

    @Test func aNewDatabaseGetsTheDefaultPageSizeAndKeepsEveryBodyExact() throws {
        let directory = TemporaryDirectory()
        let pageSize = try storeAndReadBack(path: directory.file("new.db"), configuration: .init())
        #expect(pageSize == WriterThread.Configuration.defaultPageSize)
        #expect(WriterThread.Configuration.defaultPageSize == 16384)
    }

    /// Databases made before the default changed (and MapLibre's) keep their 4096-byte pages:
    /// the page size is fixed in the file's header, the configured one only shapes new files.
    @Test func anExistingDatabaseKeepsItsPageSize() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("old.db")
        let first = try storeAndReadBack(path: path, configuration: .init(pageSize: nil))
        #expect(first == 4096)
        let reopened = try storeAndReadBack(path: path, configuration: .init())
        #expect(reopened == 4096)
    }
}
