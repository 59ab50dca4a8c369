import Packs
import Testing
@testable import Store

@Suite struct StoreReaderTests {
    @Test func storedTilesAnswerPerZoomWindowWithSpans() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("r.db")
        let store = try OfflineDatabase(path: path)
        let a = try store.createPack(StoreFixtures.pack("a"), now: 1)
        let b = try store.createPack(StoreFixtures.pack("b"), now: 1)
        let stored: [(Int64, Int64)] = [(3, 2), (4, 2), (5, 2), (7, 2), (4, 3), (0, 0)]
        var writes = try stored.map { try StoreFixtures.tile(z: 6, x: $0.0, y: $0.1, pack: a) }
        writes.append(try StoreFixtures.tile(z: 7, x: 4, y: 2, pack: a))                   // other zoom
        writes.append(try StoreFixtures.tile(z: 6, x: 6, y: 2, pack: b))                   // other pack
        writes.append(try StoreFixtures.tile(z: 6, x: 8, y: 2, pack: a, template: "https://other/{z}/{x}/{y}")) // other source
        #expect(store.apply(writes, now: 10).error == nil)

        let reader = try StoreReader(path: path)
        let bitmap = try reader.storedTiles(packID: a, urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 6, xRange: 1...9, yRange: 2...3)
        #expect(bitmap.count == 5)
        #expect(bitmap.spans(y: 2) == [3...5, 7...7])
        #expect(bitmap.spans(y: 3) == [4...4])
        #expect(!bitmap.contains(x: 0, y: 0)) // outside the window
        #expect(!bitmap.contains(x: 6, y: 2))

        // Linked by pack a: skipped; stored by pack b only (and fresh): linkable.
        let window = try reader.tileWindow(packID: a, urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 6,
                                           xRange: 0...9, yRange: 0...3, now: 10)
        #expect(window.linkedHere.count == 6)
        #expect(window.linkable.count == 1 && window.linkable.contains(x: 6, y: 2))
    }

    @Test func storedTilesAreRightWhenAWindowsRowsHaveFarApartIDs() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("r.db")
        let store = try OfflineDatabase(path: path)
        let a = try store.createPack(StoreFixtures.pack("a"), now: 1)
        let b = try store.createPack(StoreFixtures.pack("b"), now: 1)
        // Rows of one window written far apart (thousands of other rows between them): the
        // lookup cannot scan the pack's links over that id range and seeks per row instead.
        #expect(store.apply([try StoreFixtures.tile(z: 6, x: 3, y: 2, pack: a)], now: 10).error == nil)
        let filler = try (0..<6000).map { try StoreFixtures.tile(z: 12, x: Int64($0), y: 0, pack: a) }
        #expect(store.apply(filler, now: 10).error == nil)
        #expect(store.apply([try StoreFixtures.tile(z: 6, x: 4, y: 2, pack: b),
                             try StoreFixtures.tile(z: 6, x: 5, y: 3, pack: a)], now: 10).error == nil)

        let reader = try StoreReader(path: path)
        let bitmap = try reader.storedTiles(packID: a, urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 6,
                                            xRange: 0...9, yRange: 0...3)
        #expect(bitmap.count == 2)
        #expect(bitmap.spans(y: 2) == [3...3])
        #expect(bitmap.spans(y: 3) == [5...5])
        let other = try reader.storedTiles(packID: b, urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 6,
                                           xRange: 0...9, yRange: 0...3)
        #expect(other.count == 1 && other.contains(x: 4, y: 2))
    }

    @Test func expiredTilesAreNotLinkable() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("r.db")
        let store = try OfflineDatabase(path: path)
        var fresh = try StoreFixtures.tile(z: 3, x: 1, y: 1, pack: nil)
        fresh.cache.expires = 1000
        var stale = try StoreFixtures.tile(z: 3, x: 2, y: 1, pack: nil)
        stale.cache.expires = 50
        #expect(store.apply([fresh, stale, try StoreFixtures.tile(z: 3, x: 3, y: 1, pack: nil)], now: 10).error == nil)
        let window = try StoreReader(path: path).tileWindow(packID: 999, urlTemplate: StoreFixtures.template, pixelRatio: 1,
                                                            z: 3, xRange: 0...7, yRange: 0...7, now: 100)
        #expect(window.linkable.spans(y: 1) == [1...1, 3...3])
        #expect(window.linkedHere.count == 0)
    }

    @Test func oversizedWindowsAreRefused() {
        #expect(throws: TileBitmap.Failure.self) { try TileBitmap(xRange: 0...(1 << 30), yRange: 0...(1 << 30)) }
        #expect(throws: TileBitmap.Failure.self) { try TileBitmap(xRange: Int64.min...Int64.max, yRange: 0...0) }
        #expect((try? TileBitmap(xRange: 0...4095, yRange: 0...4095)) != nil)
    }
}

@Suite struct PackQueriesTests {
    @Test func packsListEventsFailuresAndIdempotencyReadBack() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("q.db")
        let store = try OfflineDatabase(path: path)
        var ids: [Int64] = []
        for name in ["alps", "Paris 100%", "paris_north", "berlin"] {
            ids.append(try store.createPack(StoreFixtures.pack(name), now: 10))
        }
        try store.setPackState(ids[1], state: .complete, error: nil, now: 20)
        try store.setPackState(ids[2], state: .failed, error: PackError(.storageFull, "the disk is full"), now: 21)
        try store.updatePack(ids[0], name: "alpes", context: .some([1, 2, 3]), now: 22)
        let e1 = try store.appendEvent(packID: ids[0], type: "state", json: #"{"a":1}"#, now: 30)
        let e2 = try store.appendEvent(packID: ids[1], type: "progress", json: #"{"b":2}"#, now: 31)
        try store.recordFailure(packID: ids[2], url: "https://t/1", status: 500, message: "server error", attempts: 5, now: 40)
        try store.recordFailure(packID: ids[2], url: "https://t/2", status: nil, message: "timeout", attempts: 5, now: 41)
        try store.storeIdempotencyKey("k1", requestHash: "h", packID: ids[3], status: 201, body: Array("{}".utf8), now: 50, retention: 86_400)
        try store.storeIdempotencyKey("k1", requestHash: "other", packID: nil, status: 500, body: [], now: 51, retention: 86_400) // first wins

        let reader = try StoreReader(path: path)
        #expect(try reader.packs().map(\.id) == ids)
        #expect(try reader.packCount() == 4)
        #expect(try reader.packs(after: ids[1], limit: 1).map(\.id) == [ids[2]])
        #expect(try reader.packs(state: .complete).map(\.name) == ["Paris 100%"])
        #expect(try reader.packs(nameContains: "100%").map(\.id) == [ids[1]]) // literal, not a LIKE pattern
        #expect(try reader.packs(nameContains: "_").map(\.id) == [ids[2]])
        let failed = try #require(try reader.pack(ids[2]))
        #expect(failed.state == .failed && failed.error == PackError(.storageFull, "the disk is full"))
        let complete = try #require(try reader.pack(ids[1]))
        #expect(complete.completedAt == 20)
        let renamed = try #require(try reader.pack(ids[0]))
        #expect(renamed.name == "alpes" && renamed.context == [1, 2, 3])
        #expect(try reader.database.scalarInt("SELECT length(description) FROM regions WHERE id = ?1", [.integer(ids[0])]) == 3)

        #expect(try reader.events(after: 0).map(\.id) == [e1, e2])
        #expect(try reader.events(after: e1).map(\.type) == ["progress"])
        #expect(try reader.events(after: 0, packID: ids[0]).map(\.json) == [#"{"a":1}"#])
        #expect(try reader.oldestEventID() == e1)
        #expect(try reader.failures(packID: ids[2]).map(\.url) == ["https://t/2", "https://t/1"])
        #expect(try reader.failures(packID: ids[2]).first?.status == nil)
        #expect(try reader.progress(ids[2])?.failedResources == 2)
        #expect(try reader.idempotencyEntry("k1") == IdempotencyEntry(requestHash: "h", packID: ids[3], status: 201, body: Array("{}".utf8), createdAt: 50))
        #expect(try reader.idempotencyEntry("nope") == nil)
    }
}
