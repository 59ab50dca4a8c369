import Testing
@testable import Store
@testable import TileFormats

@Suite struct PMTilesEncodingTests {
    @Test func hilbertIDsMatchTheSpecification() {
        // Values from the PMTiles v3 spec's examples and the reference implementation's tests.
        #expect(HilbertTileID.encode(z: 0, x: 0, y: 0) == 0)
        #expect(HilbertTileID.encode(z: 1, x: 0, y: 0) == 1)
        #expect(HilbertTileID.encode(z: 1, x: 0, y: 1) == 2)
        #expect(HilbertTileID.encode(z: 1, x: 1, y: 1) == 3)
        #expect(HilbertTileID.encode(z: 1, x: 1, y: 0) == 4)
        #expect(HilbertTileID.encode(z: 2, x: 0, y: 0) == 5)
        #expect(HilbertTileID.encode(z: 12, x: 3423, y: 1763) == 19_078_479)
        #expect(HilbertTileID.encode(z: 1, x: 2, y: 0) == nil)
        #expect(HilbertTileID.encode(z: 32, x: 0, y: 0) == nil)
        #expect(HilbertTileID.encode(z: 3, x: -1, y: 0) == nil)
    }

    @Test func hilbertIDsRoundTripAndAreDenseOnEachZoom() {
        for z in 0...5 {
            let side = 1 << z
            var ids = Set<UInt64>()
            for x in 0..<side {
                for y in 0..<side {
                    let id = HilbertTileID.encode(z: z, x: x, y: y)!
                    ids.insert(id)
                    #expect(HilbertTileID.decode(id)! == (z, x, y))
                }
            }
            let first = HilbertTileID.firstID(ofZoom: z)
            #expect(ids == Set(first..<(first + UInt64(side * side))))
        }
        let deep = HilbertTileID.encode(z: 31, x: (1 << 31) - 1, y: 12345)!
        #expect(HilbertTileID.decode(deep)! == (31, (1 << 31) - 1, 12345))
    }

    @Test func directoryRoundTripsWithRelativeOffsetsAndRuns() throws {
        let entries = [
            PMTilesEntry(tileID: 1, offset: 0, length: 100, runLength: 1),
            PMTilesEntry(tileID: 2, offset: 100, length: 50, runLength: 3),
            PMTilesEntry(tileID: 9, offset: 0, length: 100, runLength: 1),
            PMTilesEntry(tileID: 1 << 40, offset: 150, length: 7, runLength: 1),
        ]
        let encoded = PMTilesDirectory.encode(entries[...])
        #expect(Array(encoded.prefix(2)) == [0x1F, 0x8B])
        #expect(try PMTilesDirectory.decode(encoded) == entries)
    }

    @Test func hostileDirectoriesAreErrorsNotTraps() {
        #expect(throws: PMTilesDirectory.Failure.self) { try PMTilesDirectory.decode([1, 2, 3]) }
        // A count far beyond the bytes present.
        var raw: [UInt8] = []
        Varint.append(1 << 40, to: &raw)
        #expect(throws: PMTilesDirectory.Failure.self) { try PMTilesDirectory.decode(Gzip.compress(raw)) }
        // A zip bomb is cut at the inflate limit.
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 4 << 20))
        #expect(throws: PMTilesDirectory.Failure.self) { try PMTilesDirectory.decode(bomb, inflatedLimit: 1 << 20) }
    }

    @Test func largeDirectoriesSplitIntoLeavesWithARootThatFitsTheFirstFetch() throws {
        // Scattered ids and distinct offsets defeat delta coding, as a large sparse pack would.
        var entries: [PMTilesEntry] = []
        var id: UInt64 = 0
        var offset: UInt64 = 0
        for index in 0..<60_000 {
            id += UInt64(1 + (index * 7919) % 97)
            let length = UInt32(200 + (index * 31) % 5000)
            entries.append(PMTilesEntry(tileID: id, offset: offset, length: length, runLength: 1))
            offset += UInt64(length) + UInt64(index % 3)
        }
        let layout = PMTilesDirectoryLayout(entries: entries)
        #expect(layout.leafCount > 1)
        #expect(layout.root.count + PMTilesHeader.size <= PMTilesHeader.rootFetchSize)
        var decoded: [PMTilesEntry] = []
        for leaf in try PMTilesDirectory.decode(layout.root) {
            #expect(leaf.runLength == 0)
            let bytes = Array(layout.leaves[Int(leaf.offset)..<Int(leaf.offset) + Int(leaf.length)])
            let leafEntries = try PMTilesDirectory.decode(bytes)
            #expect(leafEntries.first?.tileID == leaf.tileID)
            decoded += leafEntries
        }
        #expect(decoded == entries)
    }

    @Test func headerIs127BytesAndRoundTrips() throws {
        var header = PMTilesHeader()
        header.rootOffset = 127
        header.rootLength = 300
        header.tileDataLength = 1 << 33
        header.tileType = .mvt
        header.tileCompression = .gzip
        header.minLonE7 = -1_800_000_000
        header.maxLatE7 = 850_511_287
        header.centerZoom = 7
        let bytes = header.encoded()
        #expect(bytes.count == 127)
        #expect(try PMTilesHeader(decoding: bytes) == header)
        #expect(throws: PMTilesHeader.Failure.notPMTiles) { try PMTilesHeader(decoding: [UInt8](repeating: 0, count: 127)) }
    }

    @Test func zlibRowsBecomeGzipMembersWithoutRecompressing() throws {
        let body = StoreIOFixture.vectorTile(layers: [("water", ["name"])], salt: 3)
        let zlib = StoreIOFixture.zlibCompress(body)
        let member = try #require(zlib.withUnsafeBytes { z in body.withUnsafeBytes { Gzip.rewrap(zlib: z, inflated: $0) } })
        // Same deflate payload, gzip framing (10-byte header, 8-byte trailer).
        #expect(Array(member[10..<(member.count - 8)]) == Array(zlib[2..<(zlib.count - 4)]))
        #expect(try StoreIOFixture.gunzip(member) == body)
    }

    @Test func vectorLayersAreReadFromTiles() throws {
        var layers = VectorTileLayers()
        let tile = StoreIOFixture.vectorTile(layers: [("water", ["name", "depth"]), ("roads", ["class"])], salt: 1)
        try tile.withUnsafeBytes { try layers.add(tile: $0, zoom: 3) }
        let other = StoreIOFixture.vectorTile(layers: [("water", ["name", "depth"])], salt: 2)
        try other.withUnsafeBytes { try layers.add(tile: $0, zoom: 5) }
        #expect(layers.layers["water"] == .init(fields: ["name": .string, "depth": .number], minZoom: 3, maxZoom: 5))
        #expect(layers.layers["roads"] == .init(fields: ["class": .string], minZoom: 3, maxZoom: 3))
        let garbage: [UInt8] = [0x1A, 0xFF, 0xFF, 0xFF, 0x0F, 1]
        #expect(throws: VectorTileLayers.Failure.self) { try garbage.withUnsafeBytes { try layers.add(tile: $0, zoom: 1) } }
    }
}
