import CSQLite
import Foundation
import PackdTestSupport
import Packs
import Testing
@testable import Store

/// `WriterThread.documentChanges(of:)`: per pack, moved by the batches whose rows SQLite reports
/// changed for it, by every operation, and never by another pack's download.
@Suite struct PackRowChangesTests {
    /// The hook watches the tables the pack document is read from: if a query starts reading
    /// another one, a change there would be served stale from the API's cache.
    @Test func theDocumentQueriesReadOnlyTheTablesTheHookWatches() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("tables.db")
        let writer = try WriterThread(path: path, onCommit: { _ in })
        let pack = try WriterThreadTests().makePack(writer, "a")
        writer.stop()

        final class ReadTables: @unchecked Sendable { var names: Set<String> = [] }
        let read = ReadTables()
        let reader = try StoreReader(path: path)
        sqlite3_set_authorizer(reader.database.handle, { context, action, table, _, _, _ in
            if action == SQLITE_READ, let context, let table {
                Unmanaged<ReadTables>.fromOpaque(context).takeUnretainedValue().names.insert(String(cString: table))
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(read).toOpaque())
        // Prepared on this fresh connection, so the authorizer sees every table they read.
        #expect(try reader.pack(pack) != nil)
        #expect(try reader.progress(pack) != nil)
        sqlite3_set_authorizer(reader.database.handle, nil, nil)
        #expect(read.names == Set(PackRowChanges.documentTables))
    }

    final class Counts: @unchecked Sendable {
        let writer: WriterThread
        let packs: [Int64]
        var last: [UInt64]

        init(_ writer: WriterThread, _ packs: [Int64]) {
            self.writer = writer
            self.packs = packs
            last = packs.map { writer.documentChanges(of: $0) }
        }

        /// Which packs' counts moved since the last call (each only ever up).
        func moved() -> [Bool] {
            let now = packs.map { writer.documentChanges(of: $0) }
            defer { last = now }
            for (before, after) in zip(last, now) { #expect(after >= before) }
            return zip(last, now).map { $0 != $1 }
        }
    }

    private func flush(_ writer: WriterThread) {
        let done = Signal()
        writer.flush { done.fire() }
        #expect(done.wait())
    }

    @Test func aBatchMovesThePacksWhoseRowsItChangedAndNoOther() throws {
        let directory = TemporaryDirectory()
        let writer = try WriterThread(path: directory.file("changes.db"), configuration: .init(maximumBatchDelay: .seconds(60)),
                                      onCommit: { _ in })
        defer { writer.stop() }
        let fixtures = WriterThreadTests()
        let (a, b, c) = (try fixtures.makePack(writer, "a"), try fixtures.makePack(writer, "b"), try fixtures.makePack(writer, "c"))
        let counts = Counts(writer, [a, b, c])
        let committed = writer.committedChanges

        // A's download: its tiles and progress only.
        writer.submit(contentsOf: try (0..<5).map { try StoreFixtures.tile(z: 3, x: $0, y: 1, pack: a) })
        flush(writer)
        #expect(counts.moved() == [true, false, false])
        #expect(writer.committedChanges > committed)

        // B links a tile A stored (B's progress), then stores it again at another size: the
        // progress of every pack linking it changes, A's included, though A's code wrote nothing.
        writer.submit(try StoreFixtures.tile(z: 3, x: 0, y: 1, pack: b))
        flush(writer)
        #expect(counts.moved() == [false, true, false])
        writer.submit(try StoreFixtures.tile(z: 3, x: 0, y: 1, pack: b, size: 900))
        flush(writer)
        #expect(counts.moved() == [true, true, false])

        // An operation riding a batch (the scheduler failing a pack): seen by what it changed.
        let applied = Signal()
        writer.inBatch(.init(apply: { database in
            try? database.setPackState(c, state: .failed, error: PackError(.tooManyFailures, "x"), now: 5)
        }, finish: { _ in applied.fire() }))
        flush(writer)
        #expect(applied.wait())
        #expect(counts.moved() == [false, false, true])

        // Ambient rows (no pack) and access times change no pack's document.
        writer.submit(try StoreFixtures.tile(z: 9, x: 9, y: 9, pack: nil))
        flush(writer)
        #expect(counts.moved() == [false, false, false])

        // Operations are not read from the hook: every pack moves.
        let done = Signal()
        writer.perform({ database in _ = try database.updatePack(a, name: "renamed", context: nil, now: 6) }, completion: { _ in done.fire() })
        #expect(done.wait())
        #expect(counts.moved() == [true, true, true])

        // An operation that promised to change no pack's document (as the event log's do) and
        // changed one anyway: that pack still moves, the others do not.
        let quiet = Signal()
        writer.perform({ database in _ = try database.updatePack(b, name: "quiet", context: nil, now: 7) }, changesPacks: false,
                       completion: { _ in quiet.fire() })
        #expect(quiet.wait())
        #expect(counts.moved() == [false, true, false])
    }

    /// Past `maximumPackMarks` packs the marks fold into one that moves every pack, never back.
    @Test func manyPacksFoldIntoOneMarkThatNeverGoesBack() throws {
        let directory = TemporaryDirectory()
        let writer = try WriterThread(path: directory.file("fold.db"), configuration: .init(maximumBatchDelay: .seconds(60)),
                                      onCommit: { _ in })
        defer { writer.stop() }
        let first = try WriterThreadTests().makePack(writer, "first")
        let idle = try WriterThreadTests().makePack(writer, "idle")
        // One pack per commit, as many as the marks hold and more: the first pack's mark must
        // not fall back when the marks are folded.
        let done = Signal()
        let packCount = WriterThread.maximumPackMarks + 10
        final class IDs: @unchecked Sendable { var ids: [Int64] = [] }
        let made = IDs()
        writer.perform({ database in
            for index in 0..<packCount { made.ids.append(try database.createPack(StoreFixtures.pack("p\(index)"), now: 1)) }
        }, completion: { _ in done.fire() })
        #expect(done.wait())
        let counts = Counts(writer, [first, idle])
        writer.submit(try StoreFixtures.tile(z: 1, x: 0, y: 0, pack: first))
        flush(writer)
        #expect(counts.moved() == [true, false])
        for (index, pack) in made.ids.enumerated() {
            writer.submit(try StoreFixtures.tile(z: 12, x: Int64(index), y: 0, pack: pack))
            if index % 500 == 0 || index == made.ids.count - 1 { flush(writer) }
        }
        // Folding moved both; `Counts` checked neither went back.
        #expect(counts.moved() == [true, true])
    }
}
