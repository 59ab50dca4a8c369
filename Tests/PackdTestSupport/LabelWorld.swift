import Foundation

/// A small labelled map for glyph subsetting's tests, benchmark and render check: a style whose
/// labels come from vector tiles (`places` points and `roads` lines) and from a GeoJSON source,
/// in Latin, Cyrillic, Greek, Arabic and CJK, with a `text-font` expression, a `format`
/// expression (its second section in its own font) and `text-transform: uppercase`. Some labels
/// are inside `region`, some only outside it, so which glyph ranges the region needs is known:
/// `neededRanges` for every font stack, and never `outsideOnlyRanges`. Ranges are chosen among
/// those `../shared/fixtures/make-glyphs.py` renders real glyphs for, so a render shows a missing one.
public struct LabelWorld: Sendable {
    public struct Place: Sendable {
        public let name: String
        public let nameEn: String
        public let longitude: Double
        public let latitude: Double
        /// The lowest zoom whose tiles hold it (small places appear later, as in real tiles).
        public let minZoom: Int
        public let rank: Int
    }

    /// The region of the tests: the Alps, zooms 4 to 8.
    public static let region: [Double] = [5, 44, 15, 50]
    public static let minZoom = 4
    public static let maxZoom = 8
    public static let stacks = [["Noto Sans Regular"], ["Noto Sans Bold"]]

    public static let places: [Place] = [
        Place(name: "Zürich", nameEn: "Zurich", longitude: 8.54, latitude: 47.37, minZoom: 4, rank: 6),
        Place(name: "Łódź Alpina", nameEn: "Lodz", longitude: 6.9, latitude: 45.9, minZoom: 5, rank: 2),
        Place(name: "Москва-Альпы", nameEn: "Moscow", longitude: 11.4, latitude: 47.27, minZoom: 4, rank: 5),
        Place(name: "Αθήνα", nameEn: "Athens", longitude: 13.0, latitude: 46.6, minZoom: 5, rank: 3),
        Place(name: "القاهرة", nameEn: "Cairo", longitude: 9.2, latitude: 45.46, minZoom: 4, rank: 5),
        Place(name: "东京", nameEn: "Tokyo", longitude: 7.45, latitude: 46.95, minZoom: 6, rank: 1),
        // Outside the region at every zoom of the pack: its range (U+6700…) must not be fetched.
        Place(name: "木村", nameEn: "Kimura", longitude: 139.7, latitude: 35.7, minZoom: 0, rank: 4),
    ]

    /// A road across the region, labelled along the line (`text-transform: uppercase`).
    public static let roadLatitude = 46.2
    public static let roadName = "οδός alpina"

    /// The GeoJSON points: one inside (an en dash, U+2013), one far outside (U+2116, U+2103).
    public static let pois: [(name: String, longitude: Double, latitude: Double)] = [
        ("Café – Bar", 10.0, 47.0),
        ("№ 5 ℃", -100.0, 40.0),
    ]

    /// What the region's labels need per stack. The `text-font` expression gives the city labels
    /// both stacks: Latin, Latin Extended-A, Greek, Cyrillic, Arabic and its presentation forms,
    /// CJK; the road and the GeoJSON point (an en dash: General Punctuation) use the regular one.
    public static let neededRanges: [[String]: [Int]] = [
        ["Noto Sans Regular"]: [0, 0x100, 0x300, 0x400, 0x600, 0x2000, 0x4E00, 0xFE00],
        ["Noto Sans Bold"]: [0, 0x100, 0x300, 0x400, 0x600, 0x4E00, 0xFE00],
    ]
    /// Ranges only labels outside the region need.
    public static let outsideOnlyRanges = [0x2100, 0x6700]

    public let base: String

    public init(base: String) {
        self.base = base
    }

    public var style: String {
        """
        {"version": 8, "name": "labelled",
         "sources": {
           "places": {"type": "vector", "url": "\(base)/tiles.json"},
           "pois": {"type": "geojson", "data": "\(base)/pois.geojson"}
         },
         "glyphs": "\(base)/fonts/{fontstack}/{range}.pbf",
         "layers": [
           {"id": "bg", "type": "background", "paint": {"background-color": "#f4f1ea"}},
           {"id": "roads", "type": "line", "source": "places", "source-layer": "roads",
            "paint": {"line-color": "#c99", "line-width": 3}},
           {"id": "road-labels", "type": "symbol", "source": "places", "source-layer": "roads",
            "layout": {"text-field": "{name}", "text-transform": "uppercase", "symbol-placement": "line",
                       "text-font": ["Noto Sans Regular"], "text-size": 14}},
           {"id": "city-labels", "type": "symbol", "source": "places", "source-layer": "places",
            "filter": ["!=", ["get", "class"], "hidden"],
            "layout": {
              "text-field": ["format", ["get", "name"], {}, "\\n", {},
                             ["get", "name:en"], {"font-scale": 0.8, "text-font": ["literal", ["Noto Sans Bold"]]}],
              "text-font": ["case", [">=", ["get", "rank"], 5], ["literal", ["Noto Sans Bold"]], ["literal", ["Noto Sans Regular"]]],
              "text-size": 16, "text-allow-overlap": true, "text-ignore-placement": true}},
           {"id": "poi-labels", "type": "symbol", "source": "pois",
            "layout": {"text-field": ["get", "name"], "text-font": ["literal", ["Noto Sans Regular"]], "text-size": 15,
                       "text-allow-overlap": true, "text-ignore-placement": true}}
         ]}
        """
    }

    public var tileJSON: String {
        #"{"tilejson": "3.0.0", "tiles": [""# + base + #"/tiles/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": "#
            + "\(Self.maxZoom)}"
    }

    public static var geoJSON: String {
        let features = pois.map { poi in
            #"{"type": "Feature", "properties": {"name": "\#(poi.name)"}, "geometry": {"type": "Point", "coordinates": [\#(poi.longitude), \#(poi.latitude)]}}"#
        }
        return #"{"type": "FeatureCollection", "features": ["# + features.joined(separator: ", ") + "]}"
    }

    /// The tile `z/x/y` (uncompressed MVT): the places it holds at its zoom and the road where it
    /// crosses the tile; an empty tile has no layers.
    public static func tile(z: Int, x: Int, y: Int, renaming: [String: String] = [:]) -> [UInt8] {
        let scale = Double(1 << z)
        func local(_ longitude: Double, _ latitude: Double) -> (x: Int64, y: Int64)? {
            let unitX = (longitude + 180) / 360
            let sine = sin(latitude * .pi / 180)
            let unitY = 0.5 - 0.25 * log((1 + sine) / (1 - sine)) / .pi
            let tx = (unitX * scale - Double(x)) * 4096, ty = (unitY * scale - Double(y)) * 4096
            guard (0..<4096).contains(tx), (0..<4096).contains(ty) else { return nil }
            return (Int64(tx), Int64(ty))
        }
        var builder = VectorTileBuilder()
        let placed = places.filter { z >= $0.minZoom }.compactMap { place in
            local(place.longitude, place.latitude).map { (place, $0) }
        }
        if !placed.isEmpty {
            builder.layer("places", placed.map { place, at in
                VectorTileBuilder.Feature(type: .point, properties: [
                    ("name", .string(renaming[place.name] ?? place.name)), ("name:en", .string(place.nameEn)), ("rank", .int(Int64(place.rank))),
                    ("class", .string("city")),
                ], vertices: [at])
            })
        }
        // The road: a line across every tile of the region's columns at its latitude.
        let west = (region[0] + 180) / 360 * scale, east = (region[2] + 180) / 360 * scale
        if Double(x + 1) > west, Double(x) < east, let crossing = local((Double(x) + 0.5) / scale * 360 - 180, roadLatitude) {
            builder.layer("roads", [VectorTileBuilder.Feature(type: .lineString, properties: [("name", .string(roadName))],
                                                              vertices: [(-64, crossing.y), (4160, crossing.y)])])
        }
        return builder.bytes
    }

    /// A glyph range's body for tests that need none real: distinct per stack and range.
    public static func testGlyphs(stack: String, range: String) -> [UInt8] {
        Array("glyphs \(stack) \(range)".utf8) + testBody(seed: range.utf8.reduce(7) { ($0 &* 31 &+ Int($1)) & 0xFFFF }, size: 300)
    }
}
