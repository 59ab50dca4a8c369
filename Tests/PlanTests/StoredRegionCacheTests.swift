import Foundation
import Geo
import Packs
import Testing
@testable import Plan

/// Stored definitions decode once per distinct text, as `RegionDefinition(mapLibreJSON:)` would
/// decode them, and the cache stays bounded.
@Suite struct StoredRegionCacheTests {
    /// Counts decodes; a text "bad…" does not decode.
    final class CountingDecoder: @unchecked Sendable {
        private let lock = NSLock()
        private var texts: [String] = []
        var decoded: [String] { lock.withLock { texts } }

        func decode(_ text: String) throws(RegionError) -> StoredRegionCache.Entry {
            lock.withLock { texts.append(text) }
            if text.hasPrefix("bad") { throw RegionError([.init(pointer: "/min_zoom", detail: "bad")]) }
            let definition = RegionDefinition(content: .style(url: "https://example.org/\(text)"),
                                              area: .bounds(.world), maxZoom: 1)
            return StoredRegionCache.Entry(definition: definition, region: definition.region)
        }
    }

    @Test func decodesEachDefinitionOnceAndStartsOverWhenFull() throws {
        let counter = CountingDecoder()
        let cache = StoredRegionCache(capacity: 2, maximumBytes: 1 << 20) { text throws(RegionError) in try counter.decode(text) }
        #expect(try cache.entry("a").definition.styleURL == "https://example.org/a")
        #expect(try cache.entry("a").region.styleURL == "https://example.org/a")
        _ = try cache.entry("b")
        _ = try cache.entry("c")  // full: starts over with c
        _ = try cache.entry("a")
        #expect(counter.decoded == ["a", "b", "c", "a"])
        // A definition too large to keep is decoded every time, and so is one that fails.
        let small = StoredRegionCache(capacity: 10, maximumBytes: 160) { text throws(RegionError) in try counter.decode(text) }
        _ = try small.entry(String(repeating: "x", count: 11))
        _ = try small.entry(String(repeating: "x", count: 11))
        #expect(throws: RegionError.self) { try small.entry("bad") }
        #expect(throws: RegionError.self) { try small.entry("bad") }
        #expect(counter.decoded.count == 8)
    }

    @Test func storedDefinitionsDecodeAsMapLibreJSONDoes() throws {
        let bounds = #"{"style_url":"https://example.org/style.json","min_zoom":0.0,"max_zoom":3.0,"pixel_ratio":2.0,"include_ideographs":false,"bounds":[10.0,-5.0,20.0,5.0]}"#
        let geometry = #"{"tiles":["https://t.example.org/{z}/{x}/{y}.png"],"min_zoom":1.0,"max_zoom":2.0,"pixel_ratio":1.0,"include_ideographs":true,"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}}"#
        for text in [bounds, geometry] {
            let direct = try RegionDefinition(mapLibreJSON: try JSONSerialization.jsonObject(with: Data(text.utf8)))
            #expect(try RegionDefinition(stored: text) == direct)
            #expect(try RegionDefinition(stored: text) == direct, "from the cache")
            #expect(try RegionDefinition.normalisedRegion(stored: text) == direct.region)
            // What the store writes decodes back to the same region.
            #expect(try RegionDefinition(stored: direct.mapLibreJSON) == direct)
        }
        let notJSON = #expect(throws: RegionError.self) { try RegionDefinition(stored: "{not json") }
        #expect(notJSON?.problems == [.init(pointer: "", detail: "not JSON: MapLibre stores a region definition as a JSON object")])
        let invalid = #expect(throws: RegionError.self) { try RegionDefinition(stored: #"{"style_url":"https://example.org/s.json","min_zoom":40.0,"bounds":[0.0,0.0,1.0,1.0]}"#) }
        #expect(invalid?.problems.first?.pointer == "/min_zoom")
    }
}
