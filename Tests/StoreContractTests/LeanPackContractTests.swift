import Foundation
import Packs
import Testing

/// The store contract, lean packs: a pack's stored tile bodies page by tile id (of the templates
/// asked for, no-content rows left out, pages bounded by count and bytes); the start area and the
/// glyph ranges a pack left out read back as written; the start area is recorded once.
@Suite struct LeanPackContractTests {
    @Test(arguments: StoreFactory.all)
    func tileBodiesPageThroughThePacksTiles(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let id = try store.write { try $0.createPack(ContractRows.pack("bodies"), now: 1) }
        let other = "https://other.example/{z}/{x}/{y}.png"
        store.submit((0..<30).map { ContractRows.tile(z: 7, x: Int64($0), y: 2, pack: id, size: 200) })
        store.submit((0..<5).map { ContractRows.tile(z: 7, x: Int64($0), y: 2, pack: id, template: other) })
        store.submit([ResourceWrite(key: .tile(TileKey(urlTemplate: ContractRows.template, z: 7, x: 99, y: 2)), content: .noContent,
                                    packID: id)])
        // Another pack's tile of the same template is not this pack's.
        let stranger = try store.write { try $0.createPack(ContractRows.pack("stranger"), now: 1) }
        store.submit([ContractRows.tile(z: 8, x: 1, y: 1, pack: stranger)])
        try store.flush()
        var seen: [Int64] = []
        var after: Int64 = 0
        while true {
            let page = try store.read { [after] in
                try $0.tileBodies(packID: id, urlTemplates: [ContractRows.template], afterRowID: after, limit: 8, maxBytes: 1_000)
            }
            guard let last = page.last else { break }
            // At most 8 rows, and no row after the one that passed 1,000 bytes (200 bytes each: the sixth).
            #expect(page.count <= 6)
            #expect(page.allSatisfy { $0.key.urlTemplate == ContractRows.template && $0.key.z == 7 && $0.key.x < 30 })
            #expect(page.map(\.rowID) == page.map(\.rowID).sorted() && page.first!.rowID > after)
            for tile in page {
                #expect(try tile.body.decoded() == ContractRows.tile(z: 7, x: tile.key.x, y: 2, pack: nil, size: 200).storedBody)
            }
            seen += page.map(\.key.x)
            after = last.rowID
        }
        #expect(Set(seen) == Set(0..<30) && seen.count == 30)
        #expect(try store.read { try $0.tileBodies(packID: id, urlTemplates: [], afterRowID: 0, limit: 10, maxBytes: 1 << 20) }.isEmpty)
        #expect(try store.read { try $0.tileBodies(packID: id, urlTemplates: [other, ContractRows.template], afterRowID: 0,
                                                   limit: 100, maxBytes: 1 << 20) }.count == 35)
        // Stored sizes of resources by URL, whoever holds them; unknown URLs are left out.
        store.submit([ContractRows.resource("https://example/fonts/a/0-255.pbf", pack: stranger, text: "0123456789")])
        try store.flush()
        #expect(try store.read { try $0.storedSizes(urls: ["https://example/fonts/a/0-255.pbf", "https://example/none"]) }
                == ["https://example/fonts/a/0-255.pbf": 10])
    }

    @Test(arguments: StoreFactory.all)
    func startAreaAndSkippedGlyphRangesReadBack(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        var record = ContractRows.pack("lean")
        let area = StartArea(longitude: 8.54, latitude: 47.37, radiusM: 2_500)
        record.startArea = area
        let lean = record
        let id = try store.write { try $0.createPack(lean, now: 1) }
        let plain = try store.write { try $0.createPack(ContractRows.pack("plain"), now: 1) }
        var read = try #require(try store.read { try $0.pack(id) })
        #expect(read.startArea == area && read.startAreaReadyAt == nil && read.skippedGlyphRanges == nil)
        #expect(try store.read { try $0.pack(plain) }?.startArea == nil)
        #expect(try store.inBatch { try $0.recordStartAreaReady(id, at: 40) })
        #expect(try store.inBatch { try $0.recordStartAreaReady(id, at: 50) } == false, "recorded once")
        let skipped = SkippedGlyphRanges(ranges: 497, bytes: 12_345, rangesWithKnownBytes: 3)
        try store.inBatch { try $0.recordSkippedGlyphRanges(id, skipped, now: 41) }
        read = try #require(try store.read { try $0.pack(id) })
        #expect(read.startAreaReadyAt == 40 && read.skippedGlyphRanges == skipped)
    }
}
