import Foundation
import Packs
import PackdTestSupport
import Testing
@testable import Store

/// The writer on a real file system that fills up (a small tmpfs: ENOSPC, SQLITE_FULL): the
/// batch that meets the full disk is refused, but the operations riding it (a pack's failure,
/// its events) land in the room the reserve held, and so do the operations after it, while
/// resource writes are refused without touching the disk until space is freed.
@Suite struct StorageReserveTests {
    final class Landed: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [Int: StoreError?] = [:]
        func record(_ index: Int, _ error: StoreError?) { lock.withLock { results[index] = .some(error) } }
        func result(_ index: Int) -> StoreError?? { lock.withLock { results[index] } }
    }

    /// An event appended inside the open batch; `landed` hears how its batch ended.
    private func appendEvent(_ writer: WriterThread, _ index: Int, pack: Int64, landed: Landed) {
        writer.inBatch(WriterThread.BatchOperation(apply: { database in
            _ = try? database.database.transaction {
                _ = try database.appendEvent(packID: pack, type: "progress", json: #"{"n":\#(index)}"#, now: 1)
            }
        }, finish: { landed.record(index, $0) }))
    }

    private func flush(_ writer: WriterThread) {
        let done = Signal()
        writer.flush { done.fire() }
        #expect(done.wait())
    }

    @Test(.enabled(if: SmallFileSystem.available, "mounting a tmpfs needs root (CI and the dev machines run as root)"))
    func theOperationsOfABatchAFullDiskRefusedLandInTheReserve() throws {
        // The reserve holds 4 MiB: the commits landing in it log whole 16 KiB pages.
        let disk = try SmallFileSystem(bytes: 12 << 20)
        defer { disk.unmount() }
        let path = disk.directory.appendingPathComponent("w.db").path
        let log = Recorded<BatchOutcome>()
        let writer = try WriterThread(path: path, configuration: .init(maximumBatchCount: 1000, maximumBatchDelay: .seconds(3600),
                                                                       storageReserveBytes: 4 << 20),
                                      onCommit: log.record)
        defer { writer.stop() }
        #expect((try? FileManager.default.attributesOfItem(atPath: path + "-reserve")[.size] as? Int) == 4 << 20)
        let pack = try WriterThreadTests().makePack(writer, "p")
        let landed = Landed()

        // Batches of eight incompressible 64 KiB tiles, each with an event riding it, until one
        // meets the full disk.
        var batches = 0
        while !log.all.contains(where: { $0.error?.isStorageFull == true }) {
            try #require(batches < 200, "the 12 MiB file system never filled")
            writer.submit(contentsOf: try (0..<8).map {
                try StoreFixtures.tile(z: 12, x: Int64(batches * 8 + $0), y: 0, pack: pack, size: 64 << 10)
            })
            appendEvent(writer, batches, pack: pack, landed: landed)
            flush(writer)
            batches += 1
        }
        let refusedBatch = batches - 1
        let refused = try #require(log.all.last)
        #expect(refused.failedPackIDs == [pack], "the download is failed with storage_full")
        // The batch's tiles were rolled back; the event riding it landed anyway.
        #expect(landed.result(refusedBatch) == .some(nil), "\(String(describing: landed.result(refusedBatch)))")
        #expect(!FileManager.default.fileExists(atPath: path + "-reserve"), "the reserve was released")

        // While the disk is full: tiles are refused without touching it (their pack is failed
        // again), events and state changes still land.
        writer.submit(try StoreFixtures.tile(z: 12, x: 100_000, y: 0, pack: pack, size: 64 << 10))
        appendEvent(writer, 1000, pack: pack, landed: landed)
        flush(writer)
        let refusedAgain = try #require(log.all.last)
        #expect(refusedAgain.error?.isStorageFull == true && refusedAgain.failedPackIDs == [pack])
        #expect(refusedAgain.error?.message.contains("writes resume once") == true, "\(String(describing: refusedAgain.error))")
        #expect(landed.result(1000) == .some(nil))
        let renamed = Signal()
        let renameResult = ResultBox()
        writer.perform({ try $0.updatePack(pack, name: "failed: storage_full", context: nil, now: 2) ? Int64(1) : 0 },
                       completion: { renameResult.id = try? $0.get(); renamed.fire() })
        #expect(renamed.wait())
        #expect(renameResult.id == 1, "a state change lands on the full disk")

        let reader = try StoreReader(path: path)
        let events = try reader.events(after: 0, packID: pack).map(\.json)
        #expect(events.count == batches + 1, "\(events)")
        #expect(events.contains(#"{"n":\#(refusedBatch)}"#) && events.contains(#"{"n":1000}"#))
        let committedTiles = try #require(try reader.progress(pack)).completedTiles
        #expect(committedTiles == Int64(refusedBatch * 8), "every batch before the full one is kept")
        #expect(try reader.pack(pack)?.name == "failed: storage_full")

        // Space is freed: the reserve is taken back and tiles are stored again.
        try disk.resize(to: 64 << 20)
        writer.submit(try StoreFixtures.tile(z: 12, x: 200_000, y: 0, pack: pack, size: 64 << 10))
        flush(writer)
        #expect(log.all.last?.error == nil, "\(String(describing: log.all.last?.error))")
        #expect(try reader.progress(pack)?.completedTiles == committedTiles + 1)
        #expect(FileManager.default.fileExists(atPath: path + "-reserve"), "the reserve is held again")
    }

    final class ResultBox: @unchecked Sendable { var id: Int64? }
}
