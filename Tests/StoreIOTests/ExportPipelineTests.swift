import Foundation
import Packs
import Testing
@testable import Store
@testable import TileFormats

@Suite struct ExportPipelineTests {
    private struct WriterFailure: Error, Equatable {}
    private struct ReaderFailure: Error, Equatable {}

    /// Batches arrive on the writer thread complete and in order, across many hand-offs (more
    /// batches than the queue holds), and the finale comes last.
    @Test func everyTileReachesTheWriterInOrderThenTheFinale() throws {
        let received = LockedTiles()
        let tiles = 5_000
        let produced = try ExportPipeline<Int>.run(capacity: 2, produce: { send in
            var batch = EncodedTileBatch()
            for index in 0..<tiles {
                let body = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: 100 + index % 300)
                body.withUnsafeBytes { batch.append(z: 14, x: Int64(index), y: 0, checksum: UInt32(index), bytes: $0) }
                if batch.isFull { try send(&batch) }
            }
            try send(&batch)
            return (tiles, "done")
        }, consume: { next in
            while true {
                switch try next() {
                case .batch(let batch):
                    batch.forEach { tile, bytes in received.append(x: tile.x, bytes: Array(bytes)) }
                case .finished(let count):
                    received.finish(count)
                    return
                }
            }
        })
        #expect(produced == "done")
        let (xs, bodies, finale) = received.snapshot()
        #expect(finale == tiles)
        #expect(xs == (0..<tiles).map(Int64.init))
        #expect(bodies.enumerated().allSatisfy { index, body in
            body.count == 100 + index % 300 && body.allSatisfy { $0 == UInt8(truncatingIfNeeded: index) }
        })
    }

    /// A writer that fails stops a producer blocked on a full queue, and its error is the one
    /// the caller sees — no hang, no half-finished success.
    @Test func aWriterFailureStopsTheProducerAndIsRethrown() {
        #expect(throws: WriterFailure.self) {
            try ExportPipeline<Int>.run(capacity: 1, produce: { send in
                var batch = EncodedTileBatch()
                let body = [UInt8](repeating: 1, count: 64 * 1024)
                // Far more than the queue holds: only the writer's failure can end this loop.
                for index in 0..<100_000 {
                    body.withUnsafeBytes { batch.append(z: 1, x: Int64(index), y: 0, checksum: nil, bytes: $0) }
                    if batch.isFull { try send(&batch) }
                }
                return (0, ())
            }, consume: { next in
                _ = try next()
                throw WriterFailure()
            })
        }
    }

    /// A producer failure reaches the writer as a stop (it must not finish the archive) and the
    /// producer's own error is rethrown.
    @Test func aProducerFailureStopsTheWriterWithoutAFinale() {
        let finished = LockedTiles()
        #expect(throws: ReaderFailure.self) {
            try ExportPipeline<Int>.run(produce: { send in
                var batch = EncodedTileBatch()
                [UInt8](repeating: 2, count: 10).withUnsafeBytes { batch.append(z: 0, x: 0, y: 0, checksum: nil, bytes: $0) }
                try send(&batch)
                if batch.isEmpty { throw ReaderFailure() }
                return (1, ())
            }, consume: { next in
                while true {
                    if case .finished(let count) = try next() {
                        finished.finish(count)
                        return
                    }
                }
            })
        }
        #expect(finished.snapshot().finale == nil)
    }

    /// Duplicate confirmation reads what is still buffered and what was flushed long ago alike.
    @Test func bufferedExportFileConfirmsDuplicatesBeforeAndAfterFlushing() throws {
        let fixture = StoreIOFixture()
        let file = try ExportFile.create(fixture.path("buffered.bin"))
        let first = [UInt8](repeating: 9, count: 1000) + [1, 2, 3]
        try file.append(first)
        #expect(try holds(file, first, at: 0))
        #expect(try !holds(file, first, at: 1))
        // Push the first tile out of the buffer (it holds 1 MiB), then append a large piece that
        // bypasses it.
        try file.append([UInt8](repeating: 4, count: 1_100_000))
        try file.append([UInt8](repeating: 5, count: 3_000_000))
        #expect(try holds(file, first, at: 0))
        #expect(try !holds(file, first, at: 2_000))
        #expect(try !holds(file, first, at: file.size - 10))
        #expect(file.size == UInt64(first.count + 4_100_000))
        #expect(try file.read(at: UInt64(first.count) + 1_100_000 - 1, count: 2) == [4, 5])
        try file.flush()
        file.close()
        #expect((try? FileManager.default.attributesOfItem(atPath: fixture.path("buffered.bin"))[.size] as? Int) == first.count + 4_100_000)
    }

    private func holds(_ file: ExportFile, _ bytes: [UInt8], at offset: UInt64) throws -> Bool {
        var result: Result<Bool, ExportFile.Failure> = .success(false)
        bytes.withUnsafeBytes { raw in
            result = Result { () throws(ExportFile.Failure) in try file.holds(raw, at: offset) }
        }
        return try result.get()
    }

    @Test func aGzipTrailerNamesTheCRCOfItsContent() throws {
        let tile = Array("a vector tile, more or less".utf8)
        let member = Gzip.compress(tile)
        let crc = member.withUnsafeBytes { Gzip.trailerCRC($0) }
        #expect(crc == tile.withUnsafeBytes { ZlibCodec.crc32Of($0) })
        #expect([UInt8](repeating: 0, count: 17).withUnsafeBytes { Gzip.trailerCRC($0) } == nil)
    }
}

/// What a pipeline's writer thread saw, read back on the test's thread.
private final class LockedTiles: @unchecked Sendable {
    private let lock = NSLock()
    private var xs: [Int64] = []
    private var bodies: [[UInt8]] = []
    private var finale: Int?

    func append(x: Int64, bytes: [UInt8]) {
        lock.withLock { xs.append(x); bodies.append(bytes) }
    }

    func finish(_ value: Int) {
        lock.withLock { finale = value }
    }

    func snapshot() -> (xs: [Int64], bodies: [[UInt8]], finale: Int?) {
        lock.withLock { (xs, bodies, finale) }
    }
}
