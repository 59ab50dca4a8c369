import Foundation
import Loop
import Packs
import Testing
@testable import Store

@Suite struct SQLiteStoreCloseTests {
    /// `close()` closes every connection the store opened — the writer's, its checkpointer's and
    /// each of the pool's readers, the one a read still holds once that read is done — so the
    /// last to close checkpoints the log and SQLite removes `-wal` and `-shm`, with the store
    /// object still alive. A read after it throws `StoreReaderPool.closedError`.
    @Test func closeClosesEveryConnectionAndLaterReadsThrow() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("packd.sqlite")
        let loop = try EventLoop()
        defer { loop.close() }
        let store = try SQLiteStore(path: path, loop: loop)
        let created = Signal()
        store.writer.perform({ try $0.createPack(StoreFixtures.pack("a"), now: 1) }, completion: { _ in created.fire() })
        #expect(created.wait())

        // Four readers at once, each holding its connection until all four hold one: the pool
        // opens four connections and keeps them.
        let readers = 4
        let inside = DispatchGroup()
        let together = DispatchSemaphore(value: 0)
        let counts = Recorded<Int64?>() // each read's result (nil: it threw)
        for _ in 0..<readers { inside.enter() }
        for _ in 0..<readers {
            Thread.detachNewThread {
                counts.record(try? store.readNow { reader in
                    inside.leave()
                    together.wait()
                    return try reader.packCount()
                })
            }
        }
        #expect(inside.wait(timeout: .now() + 30) == .success)
        for _ in 0..<readers { together.signal() }
        #expect(counts.wait { $0.count == readers })
        #expect(counts.all.count == readers && counts.all.allSatisfy { $0 == 1 })
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))

        // A read under way as the store closes: `close` waits for it.
        let reading = Signal(), finish = Signal(), closed = Signal()
        Thread.detachNewThread {
            counts.record(try? store.readNow { reader in
                reading.fire()
                _ = finish.wait()
                return try reader.packCount()
            })
        }
        #expect(reading.wait())
        Thread.detachNewThread {
            store.close()
            closed.fire()
        }
        #expect(!closed.waitBriefly(), "close returned while a read held its connection")
        finish.fire()
        #expect(closed.wait())
        #expect(counts.wait { $0.count == readers + 1 })

        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.contains("packd.sqlite"))
        #expect(!files.contains("packd.sqlite-wal"), "a connection was left open: \(files)")
        #expect(!files.contains("packd.sqlite-shm"), "a connection was left open: \(files)")
        #expect(throws: StoreReaderPool.closedError) { try store.readNow { try $0.packCount() } }
        store.close() // idempotent
    }
}
