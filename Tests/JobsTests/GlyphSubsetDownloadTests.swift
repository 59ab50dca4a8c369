import Foundation
import Jobs
import PackdTestSupport
import Packs
import Plan
import Store
import Testing

/// `"glyphs": "region"` downloads: the glyph ranges fetched are exactly those the stored tiles'
/// and GeoJSON's labels need (`LabelWorld.neededRanges`), never those only labels outside the
/// region need; the counts are honest throughout; the pack says what it left out.
@Suite struct GlyphSubsetDownloadTests {
    static func region(_ upstream: LabelUpstream, glyphs: String) -> [String: Any] {
        ["style_url": upstream.styleURL, "bounds": LabelWorld.region, "min_zoom": Double(LabelWorld.minZoom),
         "max_zoom": Double(LabelWorld.maxZoom), "glyphs": glyphs]
    }

    /// Glyph range starts per stack among `urls` (`…/fonts/Noto%20Sans%20Regular/768-1023.pbf`).
    static func ranges(_ urls: some Sequence<String>) -> [String: Set<Int>] {
        var ranges: [String: Set<Int>] = [:]
        for url in urls {
            guard let fonts = url.range(of: "/fonts/") else { continue }
            let parts = url[fonts.upperBound...].split(separator: "/")
            guard parts.count == 2, let start = Int(parts[1].split(separator: "-")[0]) else { continue }
            ranges[String(parts[0]).removingPercentEncoding ?? "", default: []].insert(start)
        }
        return ranges
    }

    static var expected: [String: Set<Int>] {
        Dictionary(uniqueKeysWithValues: LabelWorld.neededRanges.map { ($0.key.joined(separator: ","), Set($0.value)) })
    }

    struct Run {
        let database: TemporaryDatabase
        let harness: JobsHarness
        let packID: Int64

        init(_ upstream: LabelUpstream, glyphs: String) throws {
            database = try TemporaryDatabase()
            harness = try JobsHarness(path: database.path)
            packID = try harness.createQueuedPack(region: GlyphSubsetDownloadTests.region(upstream, glyphs: glyphs))
            let (harness, packID) = (harness, packID)
            try harness.onLoop { harness.scheduler.packQueued(packID) }
        }

        func close() {
            harness.close()
            database.remove()
        }
    }

    @Test func regionPackFetchesExactlyTheRangesItsLabelsNeed() throws {
        let upstream = try LabelUpstream()
        defer { upstream.stop() }
        let run = try Run(upstream, glyphs: "region")
        defer { run.close() }
        #expect(run.harness.waitForState(run.packID, ["complete", "failed"]) == ["active", "complete"],
                "\(run.harness.publishedError(run.packID) ?? "")")
        run.harness.close()

        // What reached the upstream, and what the pack holds: the same needed ranges.
        #expect(Self.ranges(upstream.glyphRequests.map { "/fonts/" + $0 }) == Self.expected)
        let reader = try StoreReader(path: run.database.path)
        let stored = try reader.storedResourceURLs(packID: run.packID)
        #expect(Self.ranges(stored) == Self.expected)
        for outside in LabelWorld.outsideOnlyRanges {
            #expect(!Self.ranges(stored).values.contains { $0.contains(outside) }, "range \(outside) is only outside")
        }
        // Honest counts: exact once chosen, and the pack holds exactly them.
        let record = try #require(try reader.pack(run.packID))
        let progress = try #require(try reader.progress(run.packID))
        #expect(record.expectedIsPrecise)
        #expect(record.expectedResources == progress.completedResources)
        let needed = Self.expected.values.reduce(0) { $0 + $1.count }
        let candidates = LabelWorld.stacks.count * GlyphRanges.rangeCount
        #expect(record.skippedGlyphRanges == SkippedGlyphRanges(ranges: Int64(candidates - needed), bytes: nil,
                                                                rangesWithKnownBytes: 0))
        #expect(run.harness.publishedExpected(run.packID)?.precise == true)
        #expect(run.harness.publishedExpected(run.packID)?.resources == progress.completedResources)
    }

    @Test func allPackFetchesEveryRangeAndSkipsNone() throws {
        let upstream = try LabelUpstream()
        defer { upstream.stop() }
        let run = try Run(upstream, glyphs: "all")
        defer { run.close() }
        #expect(run.harness.waitForState(run.packID, ["complete", "failed"]) == ["active", "complete"])
        run.harness.close()
        let reader = try StoreReader(path: run.database.path)
        let ranges = Self.ranges(try reader.storedResourceURLs(packID: run.packID))
        #expect(ranges.count == 2 && ranges.values.allSatisfy { $0.count == GlyphRanges.rangeCount })
        #expect(try reader.pack(run.packID)?.skippedGlyphRanges == nil)
    }

    /// A second region pack over the same store links the ranges the first stored (no request),
    /// and knows the bytes of the ranges it skips that the `all` pack holds.
    @Test func skippedBytesAreKnownForRangesStoredElsewhere() throws {
        let upstream = try LabelUpstream()
        defer { upstream.stop() }
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let all = try harness.createQueuedPack(region: Self.region(upstream, glyphs: "all"))
        try harness.onLoop { harness.scheduler.packQueued(all) }
        #expect(harness.waitForState(all, ["complete", "failed"]) == ["active", "complete"])
        let requestsBefore = upstream.glyphRequests.count
        let region = try harness.createQueuedPack(region: Self.region(upstream, glyphs: "region"))
        try harness.onLoop { harness.scheduler.packQueued(region) }
        #expect(harness.waitForState(region, ["complete", "failed"]) == ["active", "complete"])
        #expect(upstream.glyphRequests.count == requestsBefore, "every needed range was linked, none fetched")
        harness.close()
        let reader = try StoreReader(path: database.path)
        // Its GeoJSON was linked, not fetched: read from the store at the choice, its labels count.
        #expect(upstream.requests.filter { $0.target == "/pois.geojson" }.count == 1)
        #expect(Self.ranges(try reader.storedResourceURLs(packID: region)) == Self.expected)
        let skipped = try #require(try reader.pack(region)?.skippedGlyphRanges)
        #expect(skipped.rangesWithKnownBytes == skipped.ranges)
        let body = LabelWorld.testGlyphs(stack: "x", range: "0-255").count
        #expect((skipped.bytes ?? 0) >= skipped.ranges * Int64(body) / 4, "the stored sizes of the skipped ranges")
    }
}

/// A refresh of a region-glyphs pack whose tiles now carry new text fetches the ranges that text
/// needs, and nothing else new.
@Suite struct GlyphSubsetRefreshTests {
    @Test func refreshedTilesBringTheirRanges() throws {
        let upstream = try LabelUpstream()
        defer { upstream.stop() }
        let run = try GlyphSubsetDownloadTests.Run(upstream, glyphs: "region")
        defer { run.close() }
        #expect(run.harness.waitForState(run.packID, ["complete", "failed"]) == ["active", "complete"])
        let before = upstream.glyphRequests
        // Zürich now carries a name in U+6700… (木村): its tiles change upstream.
        upstream.rename("Zürich", to: "Zürich 木村")
        let harness = run.harness
        let states = harness.waitForState(run.packID, ["complete"]).count
        try PackRevalidationTests.invalidate(harness, run.packID)
        #expect(harness.waitFor(states: run.packID, count: states + 2, ["complete", "failed"]))
        let new = Set(upstream.glyphRequests).subtracting(before)
        // Zürich's label uses both stacks (the text-font expression): both get the new range.
        #expect(GlyphSubsetDownloadTests.ranges(new.map { "/fonts/" + $0 })
                == ["Noto Sans Regular": [0x6700], "Noto Sans Bold": [0x6700]])
        harness.close()
        let reader = try StoreReader(path: run.database.path)
        let record = try #require(try reader.pack(run.packID))
        let progress = try #require(try reader.progress(run.packID))
        #expect(record.state == .complete)
        #expect(record.expectedResources == progress.completedResources, "the counts grew with the new ranges")
        #expect(record.invalidation?.updated ?? 0 >= 2)
        let stored = GlyphSubsetDownloadTests.ranges(try reader.storedResourceURLs(packID: run.packID))
        #expect(stored["Noto Sans Regular"]?.contains(0x6700) == true && stored["Noto Sans Bold"]?.contains(0x6700) == true)
    }
}
