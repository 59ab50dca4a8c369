import Foundation
import Packs
import Testing

/// The store contract, stored rows: batches, progress, links, storage figures and exports.
@Suite struct ResourceContractTests {
    @Test(arguments: StoreFactory.all)
    func rowsCommitInBatchesAndProgressCountsWhatIsDurable(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 10, maximumDelay: .milliseconds(20)))
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("rows"), now: 1) }
        let tiles = (0..<25).map { ContractRows.tile(z: 5, x: Int64($0), y: 3, pack: id, size: 100 + $0) }
        store.submit(tiles)
        store.submit([ContractRows.resource("https://example/style.json", pack: id, text: "{\"version\":8}")])
        try store.flush()
        let committed = store.committed
        #expect(committed.allSatisfy { $0.committedWrites <= 10 && $0.error == nil }, "no batch holds more than its count")
        #expect(committed.map(\.committedWrites).reduce(0, +) == 26)
        let progress = try #require(try store.read { try $0.progress(id) })
        let tileBytes = Int64((0..<25).reduce(0) { $0 + 100 + $1 })
        #expect(progress.completedTiles == 25 && progress.completedTileBytes == tileBytes)
        #expect(progress.completedResources == 26 && progress.completedBytes == tileBytes + 13)
        #expect(committed.last?.progress[id] == progress, "each batch reports the progress it committed")
        #expect(try store.read { try $0.linkedTileCount() } == 25)
        #expect(try store.read { try $0.storedResourceURLs(packID: id) } == ["https://example/style.json"])
        let read = try #require(try store.read { try $0.resource(.tile(TileKey(urlTemplate: ContractRows.template, z: 5, x: 4, y: 3)), linkedTo: id) })
        #expect(read.body == StoredBody(data: ContractRows.tile(z: 5, x: 4, y: 3, pack: nil, size: 104).storedBody, compressed: false))
        #expect(try store.read { try $0.resource(.tile(TileKey(urlTemplate: ContractRows.template, z: 5, x: 4, y: 3)), linkedTo: id + 1) } == nil)
    }

    @Test(arguments: StoreFactory.all)
    func factsRideTheOpenBatchWithoutCuttingIt(_ factory: StoreFactory) throws {
        // A long delay: only the count (or the flush) may end a batch.
        let store = try ContractHarness(factory, batches: BatchSettings(maximumCount: 10, maximumDelay: .seconds(30)))
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("outage"), now: 1) }
        var submitted: Int64 = 0
        for round in 0..<4 {
            store.submit((0..<5).map { ContractRows.tile(z: 6, x: Int64(round * 5 + $0), y: 1, pack: id) })
            submitted += 5
            // An upstream outage: a failure record and an event per request, between the rows.
            for attempt in 0..<6 {
                store.store.inBatch({ database in
                    try database.recordFailure(packID: id, url: "https://t/\(round)/\(attempt)", status: 503, message: "HTTP 503",
                                               attempts: 5, now: 2)
                }, then: nil)
                store.store.logEvent(StoredEvent(id: Int64(round * 6 + attempt + 1), packID: id, type: "resource_error", json: "{}",
                                                 createdAt: 2)) { error in Issue.record("\(error)") }
            }
        }
        #expect(store.waitForCommit { $0.map(\.committedWrites).reduce(0, +) >= 20 })
        #expect(store.committed.map(\.committedWrites) == [10, 10], "facts never cut a batch short")
        try store.flush()
        #expect(try store.read { try $0.failures(packID: id, limit: 100) }.count == 24)
        #expect(try store.read { try $0.events(after: 0, packID: id, limit: 100) }.count == 24)
        let total = submitted
        #expect(try store.read { try $0.progress(id) }?.completedTiles == total)
    }

    @Test(arguments: StoreFactory.all)
    func anInBatchOperationThatThrowsTakesOnlyItselfBack(_ factory: StoreFactory) throws {
        struct Refused: Error {}
        let store = try ContractHarness(factory)
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("rows"), now: 1) }
        store.submit([ContractRows.tile(z: 1, x: 0, y: 0, pack: id)])
        #expect(throws: Refused.self) {
            try store.inBatch { database -> Int64 in
                _ = try database.createPack(ContractRows.pack("half-done"), now: 2)
                throw Refused()
            }
        }
        let created = try store.inBatch { try $0.createPack(ContractRows.pack("done"), now: 3) }
        #expect(try store.read { try $0.packs(after: 0, state: nil, nameContains: nil, limit: 10) }.map(\.name) == ["rows", "done"])
        #expect(try store.read { try $0.pack(created) }?.createdAt == 3)
        #expect(try store.read { try $0.progress(id) }?.completedTiles == 1, "the batch's rows committed")
    }

    @Test(arguments: StoreFactory.all)
    func tilesStoredElsewhereAreLinkedNotFetched(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let first = try store.write { try $0.createPack(ContractRows.pack("first"), now: 1) }
        let second = try store.write { try $0.createPack(ContractRows.pack("second"), now: 1) }
        store.submit((0..<4).map { ContractRows.tile(z: 3, x: Int64($0), y: 2, pack: first) })
        store.submit([ContractRows.tile(z: 3, x: 5, y: 2, pack: second)])
        try store.flush()
        let window = try store.read { try $0.tileWindow(packID: second, urlTemplate: ContractRows.template, pixelRatio: 1, z: 3,
                                                         xRange: 0...7, yRange: 2...2, now: 10) }
        #expect((0...7).filter { window.linkable.contains(x: $0, y: 2) } == [0, 1, 2, 3])
        #expect((0...7).filter { window.linkedHere.contains(x: $0, y: 2) } == [5])

        let linked = try store.write { try $0.linkFreshTiles(packID: second, urlTemplate: ContractRows.template, pixelRatio: 1, z: 3,
                                                             spans: [[2, 1, 2]], xRange: 0...7, yRange: 2...2, now: 10) }
        #expect((0...7).filter { linked.rows.contains(x: $0, y: 2) } == [1, 2])
        #expect(linked.progress?.completedTiles == 3)
        #expect(try store.read { try $0.linkedTileCount() } == 5, "a tile two packs link counts once")
        let after = try store.read { try $0.tileWindow(packID: second, urlTemplate: ContractRows.template, pixelRatio: 1, z: 3,
                                                        xRange: 0...7, yRange: 2...2, now: 10) }
        #expect((0...7).filter { after.linkedHere.contains(x: $0, y: 2) } == [1, 2, 5])

        store.submit([ContractRows.resource("https://example/sprite.json", pack: first)])
        try store.flush()
        let resources = try store.write { try $0.linkFreshResources(packID: second, urls: ["https://example/sprite.json", "https://nowhere"],
                                                                    now: 10) }
        #expect(resources.rows == ["https://example/sprite.json"])
        #expect(try store.read { try $0.storedResourceURLs(packID: second) } == ["https://example/sprite.json"])
    }

    /// Tiles of a PMTiles archive count as stored only when stored from the archive's current
    /// version (its validators in `etag`/`modified`): the others are fetched again, never linked.
    @Test(arguments: StoreFactory.all)
    func aTileWindowOfAVersionCountsOnlyTilesStoredFromIt(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let first = try store.write { try $0.createPack(ContractRows.pack("first"), now: 1) }
        let second = try store.write { try $0.createPack(ContractRows.pack("second"), now: 1) }
        func tile(_ x: Int64, pack: Int64, etag: String?, modified: Int64?) -> ResourceWrite {
            var write = ContractRows.tile(z: 4, x: x, y: 3, pack: pack)
            write.cache = HTTPCacheHeaders(modified: modified, etag: etag)
            return write
        }
        store.submit([tile(0, pack: first, etag: "\"v1\"", modified: 100), tile(1, pack: first, etag: "\"v2\"", modified: 100),
                      tile(2, pack: first, etag: nil, modified: 100), tile(3, pack: second, etag: "\"v2\"", modified: 100),
                      tile(4, pack: second, etag: "\"v1\"", modified: 100), tile(5, pack: second, etag: "\"v2\"", modified: 99)])
        try store.flush()
        let window = { (version: TileVersion?) in
            try store.read { try $0.tileWindow(packID: second, urlTemplate: ContractRows.template, pixelRatio: 1, z: 4,
                                               xRange: 0...7, yRange: 3...3, now: 10, version: version) }
        }
        let v2 = try window(TileVersion(etag: "\"v2\"", modified: 100))
        #expect((0...7).filter { v2.linkedHere.contains(x: $0, y: 3) } == [3])
        #expect((0...7).filter { v2.linkable.contains(x: $0, y: 3) } == [1])
        let any = try window(nil)
        #expect((0...7).filter { any.linkedHere.contains(x: $0, y: 3) } == [3, 4, 5])
        #expect((0...7).filter { any.linkable.contains(x: $0, y: 3) } == [0, 1, 2])
        let noETag = try window(TileVersion(etag: nil, modified: 100))
        #expect((0...7).filter { noETag.linkable.contains(x: $0, y: 3) } == [2])
    }

    @Test(arguments: StoreFactory.all)
    func archiveTrafficAddsUpInTheProgress(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("archive"), now: 1) }
        try store.inBatch { try $0.addArchiveTraffic(packID: id, requests: 3, bytes: 40_000) }
        try store.inBatch { try $0.addArchiveTraffic(packID: id, requests: 2, bytes: 1_000) }
        try store.inBatch { try $0.addArchiveTraffic(packID: id + 1000, requests: 2, bytes: 1_000) }
        let progress = try #require(try store.read { try $0.progress(id) })
        #expect(progress.archiveRequests == 5 && progress.archiveBytes == 41_000)
        #expect(progress.completed == StoredProgress(), "not completed counts")
    }

    @Test(arguments: StoreFactory.all)
    func deletingAPackLeavesItsOnlyRowsToTheAmbientCache(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let keep = try store.write { try $0.createPack(ContractRows.pack("keep"), now: 1) }
        let drop = try store.write { try $0.createPack(ContractRows.pack("drop"), now: 1) }
        store.submit([ContractRows.tile(z: 2, x: 0, y: 0, pack: keep, size: 1000), ContractRows.tile(z: 2, x: 1, y: 0, pack: drop, size: 700),
                      ContractRows.tile(z: 2, x: 0, y: 0, pack: drop, size: 1000)])
        try store.flush()
        #expect(try store.write { try $0.ambientCache() }.size == 0, "pack rows never count against the cache")
        #expect(try store.read { try $0.storedBytes() } == 1700)
        guard case .applied = try store.write({ try $0.transition(drop, .delete, now: 5) }) else { Issue.record("delete refused"); return }
        let ambient = try store.write { try $0.ambientCache() }.size
        #expect(ambient >= 700 && ambient < 1000, "only the row no other pack links became ambient")
        #expect(try store.read { try $0.linkedTileCount() } == 1)
        try store.write { try $0.clearAmbientCache() }
        #expect(try store.write { try $0.ambientCache() }.size == 0)
        #expect(try store.read { try $0.storedBytes() } == 1000)

        try store.write { try $0.setTileLimit(3) }
        #expect(try store.read { try $0.tileLimit() } == 3)
        try store.write { try $0.setTileLimit(nil) }
        #expect(try store.read { try $0.tileLimit() } == nil)
    }

    @Test(arguments: StoreFactory.all)
    func aMapLibreExportHoldsExactlyThePack(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("export"), now: 1) }
        let other = try store.write { try $0.createPack(ContractRows.pack("other"), now: 1) }
        store.submit((0..<6).map { ContractRows.tile(z: 4, x: Int64($0), y: 1, pack: id) }
            + [ContractRows.resource("https://example/style.json", pack: id), ContractRows.tile(z: 4, x: 9, y: 9, pack: other)])
        try store.flush()
        let path = NSTemporaryDirectory() + "packd-contract-export-\(UUID().uuidString).db"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let written = try store.read { reader in try reader.export(PackExportRequest(pack: id, version: nil), to: path) }
        #expect(written.resources == 1 && written.tiles == 6)
        #expect(FileManager.default.fileExists(atPath: path))
        // SQLite's and MapLibre's 4096-byte pages, whatever the store's own: what a phone
        // side-loads does not follow the server's page size (bytes 16–17 of the file header).
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(18))
        #expect(header.count == 18 && Int(header[16]) << 8 | Int(header[17]) == 4096)
        let sources = try store.read { try $0.tileSources(pack: id) }
        #expect(sources == [PackTileSource(urlTemplate: ContractRows.template, pixelRatio: 1, tileCount: 6)])
    }
}

extension ResourceWrite {
    /// The body bytes of a row written with `.body`.
    var storedBody: [UInt8] {
        if case .body(let body) = content { return body.data }
        return []
    }
}
