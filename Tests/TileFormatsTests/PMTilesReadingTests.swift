import Foundation
import Testing
import TileFormats

/// Distinct, recognisable tile bodies (a few repeat, as the ocean does).
func sampleTiles(maxZoom: Int, repeatEvery: Int = 7) -> [PMTilesArchiveBuilder.Tile] {
    var tiles: [PMTilesArchiveBuilder.Tile] = []
    for z in 0...maxZoom {
        for x in 0..<(1 << z) {
            for y in 0..<(1 << z) {
                let body = (x + y) % repeatEvery == 0 ? Array("ocean".utf8) : Array("tile \(z)/\(x)/\(y)".utf8)
                tiles.append(.init(z: z, x: x, y: y, bytes: body))
            }
        }
    }
    return tiles
}

@Suite struct PMTilesReadingTests {
    static let layouts: [(PMTilesHeader.Compression, PMTilesHeader.Compression)] = [(.gzip, .gzip), (.gzip, .none), (.none, .gzip), (.none, .none)]

    @Test(arguments: layouts.map { "\($0.0)/\($0.1)" }, [true, false])
    func everyTileReadsBackThroughLeafDirectories(compressions: String, clustered: Bool) throws {
        let layout = try #require(Self.layouts.first { "\($0.0)/\($0.1)" == compressions })
        var builder = PMTilesArchiveBuilder()
        builder.internalCompression = layout.0
        builder.tileCompression = layout.1
        builder.rootLimit = 200
        builder.initialLeafSize = 64
        var tiles = sampleTiles(maxZoom: 5)
        tiles.sort { HilbertTileID.encode(z: $0.z, x: $0.x, y: $0.y)! < HilbertTileID.encode(z: $1.z, x: $1.x, y: $1.y)! }
        if !clustered { tiles.reverse() }
        let archive = try PMTilesMemoryReader(builder.build(tiles))
        #expect(archive.header.clustered == clustered)
        #expect(archive.header.leafDirectoriesLength > 0)
        #expect(archive.header.minZoom == 0 && archive.header.maxZoom == 5)
        #expect(archive.header.addressedTilesCount == UInt64(tiles.count))
        #expect(archive.header.tileContentsCount < UInt64(tiles.count))
        for tile in tiles {
            #expect(try archive.tile(z: tile.z, x: tile.x, y: tile.y) == tile.bytes, "\(tile.z)/\(tile.x)/\(tile.y)")
        }
        #expect(try archive.tile(z: 6, x: 0, y: 0) == nil)
    }

    @Test func findFollowsTheSpecAgainstABruteForceOracle() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var entries: [PMTilesEntry] = []
            var id = UInt64.random(in: 0...5, using: &generator)
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                let run = UInt32.random(in: 0...4, using: &generator)
                entries.append(PMTilesEntry(tileID: id, offset: UInt64.random(in: 0...1000, using: &generator),
                                            length: UInt32.random(in: 1...50, using: &generator), runLength: run))
                id += UInt64(max(run, 1)) + UInt64.random(in: 0...3, using: &generator)
            }
            for probe in 0...(id + 2) {
                // The last entry at or before the probe decides: a leaf covers everything after its
                // id, a run covers its length.
                let expected: PMTilesLookup
                if let entry = entries.last(where: { $0.tileID <= probe }) {
                    if entry.runLength == 0 {
                        expected = .leaf(offset: entry.offset, length: entry.length)
                    } else if probe - entry.tileID < UInt64(entry.runLength) {
                        expected = .tile(offset: entry.offset, length: entry.length)
                    } else {
                        expected = .missing
                    }
                } else {
                    expected = .missing
                }
                #expect(PMTilesDirectory.find(probe, in: entries) == expected)
            }
        }
    }

    @Test func directoriesRoundTripUncompressed() throws {
        let entries = (0..<100).map { PMTilesEntry(tileID: UInt64($0 * 3), offset: UInt64($0 * 10), length: 10, runLength: 2) }
        let raw = PMTilesDirectory.encode(entries[...], compression: .none)
        #expect(try PMTilesDirectory.decode(raw, compression: .none, maxEntries: 100) == entries)
        #expect(throws: PMTilesDirectory.Failure.self) { try PMTilesDirectory.decode(raw, compression: .none, maxEntries: 99) }
        #expect(throws: PMTilesDirectory.Failure.self) { try PMTilesDirectory.decode(raw, compression: .brotli, maxEntries: 100) }
    }

    @Test func idsThatDoNotAscendAreRefused() {
        var raw: [UInt8] = []
        for value: UInt64 in [2, 5, 0, 1, 1, 1, 1, 1, 0] { Varint.append(value, to: &raw) }
        #expect(throws: PMTilesDirectory.Failure.corrupt("tile ids do not ascend at entry 1")) {
            try PMTilesDirectory.decode(raw, compression: .none, maxEntries: 10)
        }
    }

    @Test func entriesPointingOutsideTheirSectionsAreRefused() throws {
        let tile = PMTilesEntry(tileID: 1, offset: 90, length: 20, runLength: 1)
        let leaf = PMTilesEntry(tileID: 1, offset: 0, length: 0, runLength: 0)
        #expect(throws: PMTilesDirectory.Failure.self) { try PMTilesDirectory.check([tile], tileDataLength: 100, leafLength: 0) }
        #expect(throws: PMTilesDirectory.Failure.self) { try PMTilesDirectory.check([leaf], tileDataLength: 100, leafLength: 100) }
        let run = PMTilesEntry(tileID: .max - 1, offset: 0, length: 1, runLength: 5)
        #expect(throws: PMTilesDirectory.Failure.self) { try PMTilesDirectory.check([run], tileDataLength: 100, leafLength: 0) }
        try PMTilesDirectory.check([PMTilesEntry(tileID: 1, offset: 80, length: 20, runLength: 1)], tileDataLength: 100, leafLength: 0)
    }

    @Test func headersThatBreakTheSpecAreNamedByField() throws {
        var valid = PMTilesHeader()
        valid.rootOffset = 127
        valid.rootLength = 100
        valid.tileDataOffset = 227
        valid.tileDataLength = 1000
        valid.maxZoom = 14
        try valid.checked(fileSize: 1227)

        func field(_ change: (inout PMTilesHeader) -> Void, fileSize: UInt64? = 1227) -> String? {
            var header = valid
            change(&header)
            do {
                try header.checked(fileSize: fileSize)
                return nil
            } catch {
                switch error {
                case .invalid(let field, _), .unsupported(let field, _): return field
                default: return "\(error)"
                }
            }
        }
        #expect(field { $0.maxZoom = 32 } == "max_zoom")
        #expect(field { $0.minZoom = 15 } == "min_zoom")
        #expect(field { $0.tileCompression = .brotli } == "tile_compression")
        #expect(field { $0.internalCompression = .zstd } == "internal_compression")
        #expect(field { $0.rootLength = 0 } == "root_length")
        #expect(field({ _ in }, fileSize: 1226) == "tile_data_offset")
        #expect(field { $0.rootOffset = 16_300 } == "root_offset")
        #expect(field { $0.metadataOffset = .max } == "metadata_offset")
        #expect(field { $0.minLatE7 = 900_000_001 } == "min_lat_e7")
        #expect(field { $0.minLatE7 = 10; $0.maxLatE7 = -10 } == "min_lat_e7")
        #expect(field { $0.minLonE7 = 170_000_000; $0.maxLonE7 = -170_000_000 } == nil, "bounds across the antimeridian")
    }

    @Test func metadataIsAnObjectOrAPreciseFailure() throws {
        let object = try PMTilesMetadata.object(Gzip.compress(Array(#"{"name": "n", "vector_layers": []}"#.utf8)),
                                                compression: .gzip, inflatedLimit: 1000)
        #expect(object["name"] as? String == "n")
        #expect(try PMTilesMetadata.object([], compression: .gzip, inflatedLimit: 10).isEmpty)
        #expect(throws: PMTilesMetadata.Failure.notAnObject) {
            try PMTilesMetadata.object(Array("[1]".utf8), compression: .none, inflatedLimit: 10)
        }
        let bomb = Gzip.compress([UInt8](repeating: 0x20, count: 1 << 20))
        #expect(throws: PMTilesMetadata.Failure.self) { try PMTilesMetadata.object(bomb, compression: .gzip, inflatedLimit: 1 << 16) }
    }
}
