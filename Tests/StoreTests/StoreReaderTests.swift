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

        let anywhere = try reader.freshTiles(urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 6, xRange: 0...9, yRange: 0...3, now: 10)
        #expect(anywhere.count == 7)
        #expect(anywhere.contains(x: 6, y: 2))
    }

    @Test func freshTilesExcludeExpiredOnes() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("r.db")
        let store = try OfflineDatabase(path: path)
        var fresh = try StoreFixtures.tile(z: 3, x: 1, y: 1, pack: nil)
        fresh.cache.expires = 1000
        var stale = try StoreFixtures.tile(z: 3, x: 2, y: 1, pack: nil)
        stale.cache.expires = 50
        #expect(store.apply([fresh, stale, try StoreFixtures.tile(z: 3, x: 3, y: 1, pack: nil)], now: 10).error == nil)
        let bitmap = try StoreReader(path: path).freshTiles(urlTemplate: StoreFixtures.template, pixelRatio: 1, z: 3,
                                                            xRange: 0...7, yRange: 0...7, now: 100)
        #expect(bitmap.spans(y: 1) == [1...1, 3...3])
    }

    @Test func oversizedWindowsAreRefused() {
        #expect(throws: TileBitmap.Failure.self) { try TileBitmap(xRange: 0...(1 << 30), yRange: 0...(1 << 30)) }
        #expect(throws: TileBitmap.Failure.self) { try TileBitmap(xRange: Int64.min...Int64.max, yRange: 0...0) }
        #expect((try? TileBitmap(xRange: 0...4095, yRange: 0...4095)) != nil)
    }
}
