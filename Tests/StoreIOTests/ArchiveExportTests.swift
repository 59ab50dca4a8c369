import Foundation
import Packs
import Testing
@testable import Store
@testable import TileFormats

@Suite struct ArchiveExportTests {
    @Test func aPackWithSeveralTileSourcesNeedsAChoice() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture)
        let reader = try Database(path: pack.path, mode: .readOnly)
        let sources = try PackTileSource.all(pack: pack.pack, in: reader)
        #expect(sources.map(\.urlTemplate) == [PackFixture.vectorTemplate, PackFixture.rasterTemplate])
        #expect(sources.first?.tileCount == Int64(pack.vectorTiles.count))
        #expect(throws: ExportError.self) { try PackTileSource.choose(pack: pack.pack, urlTemplate: nil, in: reader) }
        #expect(throws: ExportError.self) { try PackTileSource.choose(pack: pack.pack, urlTemplate: "https://nope/{z}", in: reader) }
        #expect(throws: ExportError.self) { try PackTileSource.all(pack: 999, in: reader) }
        let raster = try PackTileSource.choose(pack: pack.pack, urlTemplate: PackFixture.rasterTemplate, in: reader)
        #expect(raster.pixelRatio == 2)
    }

    @Test func mbtilesHoldsEveryVectorTileGzippedInTMSRowsWithMetadata() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture)
        let reader = try Database(path: pack.path, mode: .readOnly)
        let source = try PackTileSource.choose(pack: pack.pack, urlTemplate: PackFixture.vectorTemplate, in: reader)
        let output = fixture.path("pack.mbtiles")
        let summary = try MBTilesExport.write(PackExportRequest(pack: pack.pack, version: nil, format: .mbtiles, source: source.urlTemplate), from: reader, to: output)
        #expect(summary.tileCount == pack.vectorTiles.count)
        #expect(summary.vectorLayers == ["roads", "water"])

        let mbtiles = try Database(path: output, mode: .readOnly)
        var seen = 0
        try mbtiles.makeStatement("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles").forEachRow { row in
            let z = Int(row.int64(at: 0)), x = Int(row.int64(at: 1)), y = (1 << z) - 1 - Int(row.int64(at: 2))
            let data = try #require(row.blob(at: 3))
            #expect(Array(data.prefix(2)) == [0x1F, 0x8B])
            #expect(try StoreIOFixture.gunzip(data) == pack.vectorTiles[PackFixture.key(z, x, y)])
            seen += 1
        }
        #expect(seen == pack.vectorTiles.count)

        var metadata: [String: String] = [:]
        try mbtiles.makeStatement("SELECT name, value FROM metadata").forEachRow { metadata[$0.string(at: 0)!] = $0.string(at: 1) }
        #expect(metadata["name"] == "Test pack")
        #expect(metadata["format"] == "pbf")
        #expect(metadata["minzoom"] == "0")
        #expect(metadata["maxzoom"] == "4")
        #expect(metadata["bounds"] == "-180.000000,-85.051129,180.000000,85.051129")
        let json = try JSONSerialization.jsonObject(with: Data(try #require(metadata["json"]).utf8)) as? [String: Any]
        let layers = try #require(json?["vector_layers"] as? [[String: Any]])
        #expect(layers.compactMap { $0["id"] as? String } == ["roads", "water"])
        let water = try #require(layers.first { $0["id"] as? String == "water" })
        #expect(water["fields"] as? [String: String] == ["name": "String", "depth": "Number"])
    }

    @Test func pmtilesReadsBackTileByTileWithDedupAndRuns() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture)
        let reader = try Database(path: pack.path, mode: .readOnly)
        let source = try PackTileSource.choose(pack: pack.pack, urlTemplate: PackFixture.vectorTemplate, in: reader)
        let output = fixture.path("pack.pmtiles")
        let summary = try PMTilesExport.write(PackExportRequest(pack: pack.pack, version: nil, format: .pmtiles, source: source.urlTemplate), from: reader, to: output)
        #expect(summary.tileCount == pack.vectorTiles.count)

        var archive = try PMTilesArchiveReader(path: output)
        let header = archive.header
        #expect(header.tileType == .mvt)
        #expect(header.tileCompression == .gzip)
        #expect(header.internalCompression == .gzip)
        #expect(header.clustered)
        #expect(header.minZoom == 0 && header.maxZoom == 4)
        #expect(header.minLonE7 == -1_800_000_000 && header.maxLonE7 == 1_800_000_000)
        #expect(header.addressedTilesCount == UInt64(pack.vectorTiles.count))
        // The ocean tiles are stored once and consecutive ones share an entry.
        let distinct = Set(pack.vectorTiles.values).count
        #expect(header.tileContentsCount == UInt64(distinct))
        #expect(header.tileEntriesCount < header.addressedTilesCount)

        let tiles = try archive.tiles()
        #expect(tiles.count == pack.vectorTiles.count)
        #expect(tiles.map(\.id) == tiles.map(\.id).sorted())
        for tile in tiles {
            let (z, x, y) = try #require(HilbertTileID.decode(tile.id))
            #expect(try StoreIOFixture.gunzip(tile.bytes) == pack.vectorTiles[PackFixture.key(z, x, y)])
        }
        let layers = try #require(archive.metadata["vector_layers"] as? [[String: Any]])
        #expect(layers.compactMap { $0["id"] as? String } == ["roads", "water"])
    }

    @Test func rasterTilesAreStoredAsTheyAre() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture)
        let reader = try Database(path: pack.path, mode: .readOnly)
        let source = try PackTileSource.choose(pack: pack.pack, urlTemplate: PackFixture.rasterTemplate, in: reader)
        let output = fixture.path("raster.pmtiles")
        _ = try PMTilesExport.write(PackExportRequest(pack: pack.pack, version: nil, format: .pmtiles, source: source.urlTemplate), from: reader, to: output)
        var archive = try PMTilesArchiveReader(path: output)
        #expect(archive.header.tileType == .png)
        #expect(archive.header.tileCompression == PMTilesHeader.Compression.none)
        let tiles = try archive.tiles()
        #expect(tiles.count == pack.rasterTiles.count)
        for tile in tiles {
            let (z, x, y) = try #require(HilbertTileID.decode(tile.id))
            #expect(tile.bytes == pack.rasterTiles[PackFixture.key(z, x, y)])
        }
        let mbtilesPath = fixture.path("raster.mbtiles")
        let summary = try MBTilesExport.write(PackExportRequest(pack: pack.pack, version: nil, format: .mbtiles, source: source.urlTemplate), from: reader, to: mbtilesPath)
        #expect(summary.format == .png)
        let mbtiles = try Database(path: mbtilesPath, mode: .readOnly)
        #expect(try rows(mbtiles, "SELECT value FROM metadata WHERE name = 'format'") == [[.text("png")]])
        #expect(try rows(mbtiles, "SELECT tile_data FROM tiles WHERE zoom_level = 1 AND tile_column = 1 AND tile_row = 0")
                == [[.blob(pack.rasterTiles[PackFixture.key(1, 1, 1)]!)]])
    }

    /// The archive is written on a second thread: its failure must still reach the caller.
    @Test func anUnwritableDestinationFailsBothArchiveExports() throws {
        let fixture = StoreIOFixture()
        let pack = try PackFixture(fixture)
        let reader = try Database(path: pack.path, mode: .readOnly)
        let source = try PackTileSource.choose(pack: pack.pack, urlTemplate: PackFixture.vectorTemplate, in: reader)
        let missing = fixture.path("no-such-directory/out")
        #expect(throws: ExportError.self) {
            try MBTilesExport.write(PackExportRequest(pack: pack.pack, version: nil, format: .mbtiles, source: source.urlTemplate), from: reader, to: missing + ".mbtiles")
        }
        #expect(throws: ExportError.self) {
            try PMTilesExport.write(PackExportRequest(pack: pack.pack, version: nil, format: .pmtiles, source: source.urlTemplate), from: reader, to: missing + ".pmtiles")
        }
        // The reader's snapshot transaction was closed either way: a later export works. The
        // export maps the pack while it reads, then leaves the caller's connection as it was.
        try reader.execute("PRAGMA mmap_size = 12345")
        let summary = try MBTilesExport.write(PackExportRequest(pack: pack.pack, version: nil, format: .mbtiles, source: source.urlTemplate), from: reader, to: fixture.path("ok.mbtiles"))
        #expect(summary.tileCount == pack.vectorTiles.count)
        #expect(try reader.scalarInt("PRAGMA mmap_size") == 12345)
    }

    /// Repeated rows are encoded once and reused: the reuse must still count each copy's zoom in
    /// the layer ranges, each unreadable copy, and yield the same bytes as encoding afresh.
    @Test func repeatedTilesKeepLayerZoomsAndUnreadableCounts() throws {
        let fixture = StoreIOFixture()
        let database = try fixture.packdDatabase("repeats.db")
        let region = try fixture.addRegion(database, definition: "{}", name: "repeats")
        let land = StoreIOFixture.vectorTile(layers: [("roads", ["class"])], salt: 1)
        let ocean = StoreIOFixture.vectorTile(layers: [("water", ["name"])], salt: 2)
        // Field 3 (a layer) of 127 zero bytes: valid zlib, a layer without a name.
        let unreadable: [UInt8] = [0x1A, 0x7F] + [UInt8](repeating: 0, count: 127)
        var expected: [String: [UInt8]] = [PackFixture.key(0, 0, 0): land]
        try fixture.addTile(database, region: region, template: "t", z: 0, x: 0, y: 0, body: land)
        for (z, body) in [(2, ocean), (3, ocean), (4, unreadable)] {
            for x in 0..<4 {
                try fixture.addTile(database, region: region, template: "t", z: Int64(z), x: Int64(x), y: 0, body: body)
                expected[PackFixture.key(z, x, 0)] = body
            }
        }
        #expect(StoreIOFixture.stored(unreadable).1 && StoreIOFixture.stored(ocean).1)
        let reader = try Database(path: fixture.path("repeats.db"), mode: .readOnly)
        let source = try PackTileSource.choose(pack: region, urlTemplate: nil, in: reader)
        let output = fixture.path("repeats.mbtiles")
        let summary = try MBTilesExport.write(PackExportRequest(pack: region, version: nil, format: .mbtiles, source: source.urlTemplate), from: reader, to: output)
        #expect(summary.unreadableVectorTiles == 4)
        #expect(summary.tileCount == 13)
        let pmtiles = try PMTilesExport.write(PackExportRequest(pack: region, version: nil, format: .pmtiles, source: source.urlTemplate), from: reader, to: fixture.path("repeats.pmtiles"))
        #expect(pmtiles.unreadableVectorTiles == 4)

        let mbtiles = try Database(path: output, mode: .readOnly)
        var seen = 0
        try mbtiles.makeStatement("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles").forEachRow { row in
            let z = Int(row.int64(at: 0)), x = Int(row.int64(at: 1)), y = (1 << z) - 1 - Int(row.int64(at: 2))
            let data = try #require(row.blob(at: 3))
            #expect(try StoreIOFixture.gunzip(data) == expected[PackFixture.key(z, x, y)])
            seen += 1
        }
        #expect(seen == 13)
        let json = try #require(try rows(mbtiles, "SELECT value FROM metadata WHERE name = 'json'").first?.first)
        guard case .text(let text) = json else { Issue.record("no json metadata"); return }
        let layers = try #require((try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["vector_layers"] as? [[String: Any]])
        let zooms = Dictionary(uniqueKeysWithValues: layers.compactMap { layer -> (String, [Int])? in
            guard let id = layer["id"] as? String, let min = layer["minzoom"] as? Int, let max = layer["maxzoom"] as? Int else { return nil }
            return (id, [min, max])
        })
        #expect(zooms == ["roads": [0, 0], "water": [2, 3]])
    }

    @Test func aCorruptStoredTileIsAnErrorNamingIt() throws {
        let fixture = StoreIOFixture()
        let database = try fixture.packdDatabase("bad.db")
        let region = try fixture.addRegion(database, definition: "{}", name: "bad")
        try fixture.addTile(database, region: region, template: "t", z: 3, x: 1, y: 2, body: Array(repeating: 7, count: 100))
        try database.execute("UPDATE tiles SET data = x'789c0102', compressed = 1")
        let reader = try Database(path: fixture.path("bad.db"), mode: .readOnly)
        let source = try PackTileSource.choose(pack: region, urlTemplate: nil, in: reader)
        #expect {
            try PMTilesExport.write(PackExportRequest(pack: region, version: nil, format: .pmtiles, source: source.urlTemplate), from: reader, to: fixture.path("x.pmtiles"))
        } throws: { error in
            guard case ExportError.invalidTile(3, 1, 2, _) = error else { return false }
            return true
        }
    }
}
