import Geo
import PackdTestSupport
import Packs
import Testing
import TileFormats

@testable import Jobs

/// The pure parts of reading archives: which requests a set of tiles becomes, the leaf cache's
/// bound, what a validator sends and accepts, and where each tile is.
@Suite struct ArchiveRangePlanTests {
    static func tile(_ x: Int) -> TileID { TileID(z: 10, x: x, y: 0) }

    static func plan(_ tiles: [(Int, UInt64, UInt64)], gap: UInt64, span: UInt64) -> ArchiveRangePlan {
        ArchiveRangePlan(tiles.map { (tile($0.0), $0.1, $0.2) }, bounds: .init(maxGap: gap, maxSpan: span))
    }

    @Test func tilesCloserThanTheGapShareARequestUpToTheSpan() {
        // Bytes 0-99, 100-199 (adjacent), 250-299 (a 50-byte gap), 1000-1099 (a 700-byte gap).
        let tiles: [(Int, UInt64, UInt64)] = [(1, 0, 100), (2, 100, 100), (3, 250, 50), (4, 1000, 100)]
        let tight = Self.plan(tiles, gap: 0, span: 1 << 20)
        #expect(tight.requests.map(\.bytes) == [0...199, 250...299, 1000...1099])
        let bridging = Self.plan(tiles, gap: 64, span: 1 << 20)
        #expect(bridging.requests.map(\.bytes) == [0...299, 1000...1099])
        #expect(bridging.bytes == 400, "the 50-byte gap is read, the 700-byte one is not")
        let everything = Self.plan(tiles, gap: 1000, span: 1 << 20)
        #expect(everything.requests.map(\.bytes) == [0...1099])
        // The span bounds a request: 0-199 fits 250 bytes, 250-299 would make it 300.
        let bounded = Self.plan(tiles, gap: 1000, span: 250)
        #expect(bounded.requests.map(\.bytes) == [0...199, 250...299, 1000...1099])
        // Every tile is in exactly one request, at its own bytes.
        for plan in [tight, bridging, everything, bounded] {
            #expect(plan.requests.flatMap { $0.pieces.flatMap(\.tiles) }.map(\.x).sorted() == [1, 2, 3, 4])
        }
    }

    @Test func identicalTilesAreReadOnceAndEmptyOnesNotAtAll() {
        // Tiles 1-3 share the ocean's bytes (the spec's deduplication), tile 4 is its own, 5 empty.
        let plan = Self.plan([(1, 500, 40), (4, 0, 100), (2, 500, 40), (3, 500, 40), (5, 90, 0)], gap: 0, span: 1 << 20)
        #expect(plan.requests.map(\.bytes) == [0...99, 500...539])
        let ocean = plan.requests[1].pieces
        #expect(ocean.count == 1 && ocean[0].tiles.map(\.x).sorted() == [1, 2, 3])
        #expect(plan.empty.map(\.x) == [5])
        #expect(plan.bytes == 140)
    }

    @Test func aTileLargerThanTheSpanIsARequestOfItsOwnAndSlicesComeBackWhole() {
        let plan = Self.plan([(1, 0, 10), (2, 10, 5000), (3, 5010, 10)], gap: 1 << 20, span: 1000)
        #expect(plan.requests.map(\.bytes) == [0...9, 10...5009, 5010...5019])
        let body = (0..<5010).map { UInt8(truncatingIfNeeded: $0) }
        let request = plan.requests[1]
        #expect(Array(request.slice(request.pieces[0], of: Array(body[10...]))) == Array(body[10..<5010]))
    }

    @Test func overlappingContentsOfAHostileArchiveStayInOneRequest() {
        // Two entries whose bytes overlap (allowed by nothing but not refused by the spec).
        let plan = Self.plan([(1, 0, 100), (2, 50, 100)], gap: 0, span: 1 << 20)
        #expect(plan.requests.map(\.bytes) == [0...149])
        #expect(plan.requests[0].pieces.map(\.offset) == [0, 50])
    }

    @Test func aRandomBandIsCoveredExactlyWithinItsBounds() {
        // Seeded (SplitMix64 through `randomBytes`): a failing round fails the same way again.
        for round in UInt64(0)..<50 {
            var rolls = randomBytes(count: 8 * 602, seed: round).withUnsafeBytes { Array($0.bindMemory(to: UInt64.self)) }.makeIterator()
            func roll(_ range: ClosedRange<UInt64>) -> UInt64 { range.lowerBound + rolls.next()! % (range.upperBound - range.lowerBound + 1) }
            var offset: UInt64 = 0
            var tiles: [(Int, UInt64, UInt64)] = []
            for x in 0..<300 {
                offset += roll(0...3000)
                let length = roll(0...2000)
                tiles.append((x, offset, length))
                offset += length
            }
            let gap = roll(0...5000)
            let span = roll(2000...50_000)
            let plan = Self.plan(tiles, gap: gap, span: span)
            for request in plan.requests {
                #expect(request.count <= span || request.pieces.count == 1)
                for piece in request.pieces { #expect(request.bytes.contains(piece.offset) && request.bytes.contains(piece.offset + piece.length - 1)) }
            }
            for (first, second) in zip(plan.requests, plan.requests.dropFirst()) {
                // Two requests are apart by more than the gap, or merging them would break the span.
                #expect(second.bytes.lowerBound - first.bytes.upperBound - 1 > gap
                        || second.bytes.upperBound - first.bytes.lowerBound + 1 > span)
            }
            #expect(plan.requests.reduce(0) { $0 + $1.tileCount } + plan.empty.count == tiles.count)
        }
    }

    @Test func theLeafCacheDropsTheLeastRecentlyUsedAndCountsWhatItReadAgain() {
        var cache = ArchiveLeafCache(capacity: 10)
        let entries = { (count: Int) in (0..<count).map { PMTilesEntry(tileID: UInt64($0), offset: 0, length: 1, runLength: 1) } }
        let (a, b, c) = (ArchiveLeafKey(offset: 0, length: 1), ArchiveLeafKey(offset: 1, length: 1), ArchiveLeafKey(offset: 2, length: 1))
        cache.insert(entries(4), for: a)
        cache.insert(entries(4), for: b)
        cache.touch([a])
        cache.insert(entries(4), for: c)  // 12 entries: b, the least recently used, goes
        #expect(cache[a] != nil && cache[b] == nil && cache[c] != nil && cache.entryCount == 8)
        cache.insert(entries(20), for: b)  // alone above the bound, it stays: a lookup waits for it
        #expect(cache[b] != nil && cache.leaves.count == 1)
        #expect(cache.fetched == 4 && cache.refetched == 1)
    }

    @Test func validatorsSendAStrongETagOrTheDateAndKnowTheirArchive() {
        let strong = ArchiveValidator(etag: "\"a\"", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT", size: 100)
        #expect(strong.ifMatch == "\"a\"" && strong.ifUnmodifiedSince == nil)
        let weak = ArchiveValidator(etag: "W/\"a\"", lastModified: "Tue, 14 Nov 2023 22:13:20 GMT", size: 100)
        #expect(weak.ifMatch == nil && weak.ifUnmodifiedSince == 1_700_000_000, "If-Match never matches a weak ETag")
        #expect(strong.sameArchive(as: weak), "compared weakly")
        #expect(!strong.sameArchive(as: ArchiveValidator(etag: "\"a\"", lastModified: nil, size: 101)), "another size")
        #expect(!strong.sameArchive(as: ArchiveValidator(etag: "\"b\"", lastModified: nil, size: 100)))
        let dated = ArchiveValidator(etag: nil, lastModified: "Tue, 14 Nov 2023 22:13:20 GMT", size: 100)
        #expect(!dated.sameArchive(as: ArchiveValidator(etag: nil, lastModified: "Wed, 15 Nov 2023 22:13:20 GMT", size: 100)))
        #expect(strong.tileVersion == TileVersion(etag: "\"a\"", modified: 1_700_000_000))
    }

    @Test func answersAreReadAgainstTheRequest() {
        let read = ArchiveRead(url: "https://x/a.pmtiles", range: 10...19,
                               validator: ArchiveValidator(etag: "\"a\"", lastModified: nil, size: 100))
        guard case .bytes(let bytes) = read.partial(headers: ["content-range": "bytes 10-19/100", "etag": "\"a\""], body: Array(repeating: 1, count: 10))
        else { Issue.record("a matching 206 is bytes"); return }
        #expect(bytes.range == 10...19 && bytes.validator.size == 100)
        guard case .replaced = read.partial(headers: ["content-range": "bytes 10-19/120", "etag": "\"a\""], body: []) else {
            Issue.record("another size is another archive"); return
        }
        guard case .replaced = read.partial(headers: ["content-range": "bytes 10-19/100", "etag": "\"b\""], body: []) else {
            Issue.record("another ETag is another archive"); return
        }
        guard case .failed(.invalid) = read.partial(headers: ["content-range": "bytes 10-19/*"], body: []) else {
            Issue.record("a 206 without the archive's size cannot be checked"); return
        }
        guard case .replaced = read.failure(status: 412), case .replaced = read.failure(status: 416),
              case .failed(.unauthorized) = read.failure(status: 403), case .failed(.unavailable(_, 404?, _)) = read.failure(status: 404)
        else { Issue.record("statuses"); return }
    }

    @Test func tilesAreLocatedThroughLeavesAndTheMissingOnesSaidSo() throws {
        var builder = PMTilesArchiveBuilder()
        builder.rootLimit = 100
        builder.initialLeafSize = 16
        let tiles = (0..<64).map { PMTilesArchiveBuilder.Tile(z: 3, x: $0 % 8, y: $0 / 8, bytes: [UInt8($0)]) }.filter { $0.x != 5 }
        let archive = try PMTilesMemoryReader(builder.build(tiles))
        let header = archive.header
        let root = try PMTilesDirectory.decode(Array(archive.bytes[Int(header.rootOffset)..<Int(header.rootOffset + header.rootLength)]),
                                              compression: header.internalCompression, maxEntries: 1000)
        let wanted = [TileID(z: 3, x: 1, y: 1), TileID(z: 3, x: 5, y: 2), TileID(z: 4, x: 0, y: 0)]
        let first = ArchiveTileFetch.locate(wanted, root: root, leaves: [:], header: header)
        #expect(first.located.isEmpty && !first.needs.isEmpty, "everything is in leaves")
        var leaves: [ArchiveLeafKey: [PMTilesEntry]] = [:]
        for key in first.needs.keys {
            let start = Int(header.leafDirectoriesOffset + key.offset)
            leaves[key] = try PMTilesDirectory.decode(Array(archive.bytes[start..<(start + Int(key.length))]),
                                                      compression: header.internalCompression, maxEntries: 1000)
        }
        let second = ArchiveTileFetch.locate(wanted, root: root, leaves: leaves, header: header)
        #expect(second.needs.isEmpty)
        #expect(second.missing.map(\.x).sorted() == [0, 5], "3/5/2 is absent and z4 beyond the archive")
        let located = try #require(second.located.first)
        #expect(located.tile == TileID(z: 3, x: 1, y: 1))
        #expect(try Array(archive.bytes[Int(located.offset)..<Int(located.offset + located.length)]) == archive.storedTile(z: 3, x: 1, y: 1))
    }
}
