import Foundation
import Geo
import Packs
import Testing

@testable import Plan

@Suite struct RegionDefinitionTests {
    private func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }

    private func problems(_ text: String) throws -> [RegionError.Problem] {
        do {
            _ = try RegionDefinition(json: try json(text))
            return []
        } catch let error as RegionError {
            return error.problems
        }
    }

    @Test func decodesStyleBoundsRegion() throws {
        let region = try RegionDefinition(json: try json("""
            {"style_url": "https://example.com/style.json", "bounds": [113.8, 22.1, 114.5, 22.6],
             "min_zoom": 0, "max_zoom": 14, "pixel_ratio": 2, "include_ideographs": false}
            """))
        #expect(region.styleURL == "https://example.com/style.json")
        #expect(region.area == .bounds(try LngLatBounds(west: 113.8, south: 22.1, east: 114.5, north: 22.6)))
        #expect(region.minZoom == 0 && region.maxZoom == 14 && region.pixelRatio == 2)
        #expect(region.includeIdeographs == false)
    }

    @Test func defaultsFollowMapLibre() throws {
        let region = try RegionDefinition(json: try json("""
            {"style_url": "https://example.com/style.json", "bounds": [1, 2, 3, 4]}
            """))
        #expect(region.minZoom == 0 && region.maxZoom == nil && region.pixelRatio == 1 && region.includeIdeographs)
    }

    @Test func decodesStyleGeometryRegion() throws {
        let region = try RegionDefinition(json: try json("""
            {"style_url": "http://example.com/style.json", "min_zoom": 10, "max_zoom": 16,
             "geometry": {"type": "LineString", "coordinates": [[8.5, 47.3], [8.6, 47.4]]}}
            """))
        guard case .geometry(let geometry) = region.area else {
            Issue.record("expected a geometry region")
            return
        }
        #expect(geometry == .lineString([LngLat(longitude: 8.5, latitude: 47.3), LngLat(longitude: 8.6, latitude: 47.4)]))
    }

    @Test func decodesTemplateRegion() throws {
        let region = try RegionDefinition(json: try json("""
            {"tiles": ["https://{s}.tile.example.org/{z}/{x}/{y}.png"], "subdomains": ["a","b","c"],
             "scheme": "tms", "tile_size": 256, "bounds": [-10, 40, 5, 50], "min_zoom": 0, "max_zoom": 12}
            """))
        guard case .tiles(let source) = region.content else {
            Issue.record("expected a template region")
            return
        }
        #expect(source.subdomains == ["a", "b", "c"] && source.scheme == .tms && source.tileSize == 256)
        #expect(source.template.template == "https://{s}.tile.example.org/{z}/{x}/{y}.png")
    }

    @Test func reportsEveryProblemWithItsPointer() throws {
        let found = try problems("""
            {"style_url": "ftp://example.com/style.json", "bounds": [10, 50, 20, 40],
             "min_zoom": -1, "max_zoom": 31, "pixel_ratio": 0, "include_ideographs": "no", "zoom": 3}
            """)
        let pointers = Set(found.map(\.pointer))
        #expect(pointers.contains("/style_url"))
        #expect(pointers.contains { $0.hasPrefix("/bounds") })
        #expect(pointers.isSuperset(of: ["/min_zoom", "/max_zoom", "/pixel_ratio", "/include_ideographs", "/zoom"]))
        #expect(found.allSatisfy { !$0.detail.isEmpty })
    }

    /// Credentials belong in the upstream rules, never in a stored URL; a space or control
    /// character would make a request line no upstream can read.
    @Test func clientURLsCarryNoUserInfoNorSpaces() throws {
        let style = try problems(#"{"style_url": "https://user:secret@example.com/s.json", "bounds": [1, 2, 3, 4]}"#)
        #expect(style.map(\.pointer) == ["/style_url"])
        #expect(style.first?.detail.contains("secret") == false)
        let templates = try problems(#"{"tiles": ["https://a.example/{z}/{x}/{y}", "https://k@b.example/{z}/{x}/{y}"], "bounds": [1, 2, 3, 4], "max_zoom": 3}"#)
        #expect(templates.map(\.pointer) == ["/tiles/1"])
        #expect(try problems(#"{"style_url": "https://example.com/a b.json", "bounds": [1, 2, 3, 4]}"#).map(\.pointer) == ["/style_url"])
        #expect(try problems(#"{"tiles": ["https://example.com/{z}/{x}/{y}\u0001"], "bounds": [1, 2, 3, 4], "max_zoom": 3}"#).map(\.pointer) == ["/tiles/0"])
        // A combining mark right after "//" merges with the slash into one Character: scalars decide.
        #expect(try problems(#"{"style_url": "https://\u0301u:p@example.com/s.json", "bounds": [1, 2, 3, 4]}"#).map(\.pointer) == ["/style_url"])
        // No user info there; but a host starting with a combining mark is no IDN name libcurl converts.
        let marked = try problems(#"{"style_url": "https://\u0301example.com/s.json", "bounds": [1, 2, 3, 4]}"#)
        #expect(marked.map(\.pointer) == ["/style_url"])
        #expect(marked.first?.detail.contains("user info") == false)
        // An @ after the host is part of the path or query, not user info.
        #expect(try problems(#"{"style_url": "https://example.com/styles/@v2/s.json?by=me@example.com", "bounds": [1, 2, 3, 4]}"#).isEmpty)
    }

    /// What libcurl would refuse is refused where it is written: its URL parser (`^` in a host)
    /// and a host its IDN conversion does not take. Tile templates are checked with their
    /// placeholders filled in, so `{s}` in a host and `{bbox-epsg-3857}` in a query pass.
    @Test func clientURLsLibcurlRefusesAreProblems() throws {
        let style = try problems(#"{"style_url": "htTp://ålč¨#…", "bounds": [1, 2, 3, 4]}"#)
        #expect(style.map(\.pointer) == ["/style_url"])
        #expect(style.first?.detail.contains("libcurl") == true)
        #expect(try problems(#"{"style_url": "htTpS://^🌥?b", "bounds": [1, 2, 3, 4]}"#).map(\.pointer) == ["/style_url"])
        let templates = try problems(#"{"tiles": ["https://tiles.example/{z}/{x}/{y}.pbf?bbox={bbox-epsg-3857}", "https://^.example/{z}/{x}/{y}"], "bounds": [1, 2, 3, 4], "max_zoom": 3}"#)
        #expect(templates.map(\.pointer) == ["/tiles/1"])
        #expect(try problems(#"{"tiles": ["https://{s}.tiles.example/{z}/{x}/{y}"], "subdomains": ["a", "b"], "bounds": [1, 2, 3, 4], "max_zoom": 3}"#).isEmpty)
    }

    @Test func minAboveMaxIsAProblem() throws {
        let found = try problems("""
            {"style_url": "https://example.com/s.json", "bounds": [1, 2, 3, 4], "min_zoom": 9, "max_zoom": 4}
            """)
        #expect(found.map(\.pointer) == ["/min_zoom"])
    }

    @Test func geometryProblemsPointIntoTheGeometry() throws {
        let found = try problems("""
            {"style_url": "https://example.com/s.json", "min_zoom": 1, "max_zoom": 4,
             "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}}
            """)
        #expect(found.count == 1)
        #expect(found.first?.pointer.hasPrefix("/geometry/coordinates") == true)
    }

    @Test func shapeProblems() throws {
        #expect(try problems(#"{"bounds": [1, 2, 3, 4]}"#).map(\.pointer) == [""])
        #expect(try problems(#"{"style_url": "https://e.com/s.json"}"#).map(\.pointer) == [""])
        #expect(try problems("""
            {"style_url": "https://e.com/s.json", "tiles": ["https://e.com/{z}/{x}/{y}"], "bounds": [1, 2, 3, 4]}
            """).map(\.pointer) == ["/tiles"])
        #expect(try problems("""
            {"style_url": "https://e.com/s.json", "scheme": "tms", "bounds": [1, 2, 3, 4]}
            """).map(\.pointer) == ["/scheme"])
        #expect(try problems("""
            {"tiles": ["https://e.com/{z}/{x}.png"], "bounds": [1, 2, 3, 4], "max_zoom": 3}
            """).map(\.pointer) == ["/tiles/0"])
        #expect(try problems("""
            {"tiles": ["https://e.com/{z}/{x}/{y}.png"], "bounds": [1, 2, 3, 4]}
            """).map(\.pointer) == ["/max_zoom"])
        #expect(try problems(#"[1, 2]"#).map(\.pointer) == [""])
    }

    @Test(arguments: [
        #"{"style_url": "https://e.com/s.json", "bounds": [1, 2, 3, 4], "min_zoom": 2, "max_zoom": 9.5, "pixel_ratio": 1.5, "include_ideographs": false}"#,
        #"{"style_url": "https://e.com/s.json", "bounds": [170, -20, -170, 10], "min_zoom": 0}"#,
        #"{"style_url": "https://e.com/s.json", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}, "min_zoom": 3, "max_zoom": 5}"#,
        #"{"tiles": ["https://{s}.e.com/{z}/{x}/{y}{ratio}.png", "https://x.e.com/{z}/{x}/{y}.png"], "subdomains": ["a", "b"], "scheme": "tms", "tile_size": 512, "bounds": [1, 2, 3, 4], "max_zoom": 12}"#,
    ])
    func roundTripsThroughBothJSONForms(_ text: String) throws {
        let region = try RegionDefinition(json: try json(text))
        let apiJSON = try SortedJSONEncoder.encode(region.region)
        #expect(try RegionDefinition(json: JSONSerialization.jsonObject(with: Data(apiJSON))) == region)

        let mapLibre = region.mapLibreJSON
        let decoded = try RegionDefinition(mapLibreJSON: JSONSerialization.jsonObject(with: Data(mapLibre.utf8)))
        #expect(decoded == region)
    }

    @Test func mapLibreDefinitionUsesItsOrderAndDoubles() throws {
        let region = try RegionDefinition(json: try json("""
            {"style_url": "https://e.com/s.json", "bounds": [-10, 40, 5, 50], "min_zoom": 0, "max_zoom": 14}
            """))
        #expect(region.mapLibreJSON == """
            {"style_url":"https://e.com/s.json","min_zoom":0.0,"max_zoom":14.0,"pixel_ratio":1.0,\
            "include_ideographs":true,"bounds":[40.0,-10.0,50.0,5.0]}
            """)
        let open = try RegionDefinition(json: try json("""
            {"style_url": "https://e.com/s.json", "bounds": [-10, 40, 5, 50]}
            """))
        #expect(!open.mapLibreJSON.contains("max_zoom"))
    }

    /// A definition MapLibre stored keeps its style URL whatever the scheme (phones store
    /// `mapbox://`, `asset://`…), and writes back byte for byte; the API still downloads http(s) only.
    @Test(arguments: ["mapbox://styles/mapbox/streets-v11", "maptiler://maps/basic", "asset://style.json",
                      "file:///sdcard/style.json"])
    func storedDefinitionsKeepAStyleURLOfAnyScheme(styleURL: String) throws {
        let stored = #"{"style_url":"\#(styleURL)","min_zoom":0.0,"max_zoom":1.0,"pixel_ratio":1.0,"#
            + #""include_ideographs":false,"bounds":[-10.0,-20.0,10.0,20.0]}"#
        let region = try RegionDefinition(mapLibreJSON: try json(stored))
        #expect(region.styleURL == styleURL)
        #expect(region.mapLibreJSON == stored)
        #expect(region.region.styleURL == styleURL)
        #expect(try problems(#"{"style_url": "\#(styleURL)", "bounds": [-20, -10, 20, 10]}"#).map(\.pointer) == ["/style_url"])
    }

    @Test(arguments: ["", "styles/relative.json", "mapbox://styles/a\\u0001b"])
    func storedStyleURLsMustStillBeAbsoluteURLs(styleURL: String) throws {
        let stored = #"{"style_url":"\#(styleURL)","min_zoom":0.0,"pixel_ratio":1.0,"bounds":[-10.0,-20.0,10.0,20.0]}"#
        #expect(throws: RegionError.self) { try RegionDefinition(mapLibreJSON: try json(stored)) }
    }

    @Test func normalisedFormSpellsOutDefaults() throws {
        let region = try RegionDefinition(json: try json("""
            {"tiles": ["https://e.com/{z}/{x}/{y}.png"], "bounds": [1, 2, 3, 4], "max_zoom": 6}
            """))
        let normalised = region.region
        #expect(normalised.scheme == "xyz" && normalised.tileSize == 256)
        #expect(normalised.minZoom == 0 && normalised.pixelRatio == 1)
        // Glyphs come only from a style: a tiles region neither takes nor shows `include_ideographs`.
        #expect(normalised.includeIdeographs == nil && normalised.subdomains == nil)
        #expect(try problems("""
            {"tiles": ["https://e.com/{z}/{x}/{y}.png"], "bounds": [1, 2, 3, 4], "max_zoom": 6, "include_ideographs": false}
            """).map(\.pointer) == ["/include_ideographs"])
        #expect(normalised.bounds == [1, 2, 3, 4])
    }

    @Test func geometryLimitsApply() throws {
        let ring = (0...40).map { index -> String in
            let angle = Double(index % 40) / 40 * 2 * .pi
            return "[\(cos(angle)), \(sin(angle))]"
        }.joined(separator: ",")
        let text = """
            {"style_url": "https://e.com/s.json", "min_zoom": 1, "max_zoom": 4,
             "geometry": {"type": "Polygon", "coordinates": [[\(ring)]]}}
            """
        #expect(throws: Never.self) { try RegionDefinition(json: try json(text)) }
        do {
            _ = try RegionDefinition(json: try json(text), geometryLimits: GeoJSONLimits(maxVertices: 20))
            Issue.record("accepted 41 vertices with a limit of 20")
        } catch let error as RegionError {
            #expect(error.problems.count == 1 && error.problems[0].pointer.hasPrefix("/geometry"))
        }
    }
}
