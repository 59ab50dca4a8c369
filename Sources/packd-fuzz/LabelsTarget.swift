import Foundation
import Jobs
import Packs
import Plan
import TileFormats

/// What glyph subsetting reads from data it did not make: the first byte picks the reader. Even:
/// the rest is a vector tile, decoded and every feature handed to label layers using every kind
/// of expression glyph subsetting models. Odd: the rest is a style's symbol layer (JSON), its
/// label expressions evaluated against a few features of every value type. Either way nothing
/// may trap, and whatever a label draws needs at least the range `0-255` of its stacks.
enum LabelsTarget {
    static let style = """
        {"version": 8, "sources": {"v": {"type": "vector", "tiles": ["https://t.example/{z}/{x}/{y}.pbf"]}},
         "glyphs": "https://g.example/{fontstack}/{range}.pbf",
         "layers": [
           {"id": "a", "type": "symbol", "source": "v", "source-layer": "places",
            "filter": ["all", ["==", "$type", "Point"], ["!in", "class", "hidden", "none"], [">=", ["get", "rank"], 0]],
            "layout": {"text-field": ["format", ["upcase", ["get", "name"]], {}, "\\n", {},
                                      ["coalesce", ["get", "name:en"], ["to-string", ["get", "rank"]]],
                                      {"text-font": ["literal", ["Bold"]]}],
                       "text-font": ["case", [">", ["get", "rank"], 3], ["literal", ["Bold"]], ["literal", ["Regular"]]],
                       "symbol-placement": "line", "text-transform": "lowercase"}},
           {"id": "b", "type": "symbol", "source": "v", "source-layer": "places",
            "layout": {"text-field": "{name} ({ref})", "text-writing-mode": ["vertical"],
                       "text-font": ["Regular"]}},
           {"id": "c", "type": "symbol", "source": "v", "source-layer": "roads",
            "layout": {"text-field": ["match", ["get", "class"], ["a", "b"], ["concat", ["get", "ref"], "—"],
                                      ["step", ["zoom"], ["number-format", ["get", "rank"], {}], 8, ["get", "name"]]],
                       "text-font": ["Regular"]}}
         ]}
        """

    static let layers: [LabelLayer] = {
        (try? StyleDocument(style: Data(style.utf8), url: "https://s.example/style.json"))?.labelLayers ?? []
    }()

    static func run(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        invariant(layers.count == 3, "the target's style has three label layers")
        let input = Array(bytes.dropFirst())
        if selector % 2 == 0 { tile(input) } else { layer(input) }
    }

    static func tile(_ input: [UInt8]) {
        guard let tile = try? VectorTile(decoding: input) else { return }
        var glyphs = LabelGlyphs()
        for layer in tile.layers {
            let keys = VectorTileLabelFeature.keys(of: layer)
            for feature in layer.features {
                let labelFeature = VectorTileLabelFeature(layer: layer, keys: keys, feature: feature)
                for label in layers where label.sourceLayer == layer.name { glyphs.add(labelFeature, layer: label) }
            }
        }
        check(glyphs)
    }

    static func layer(_ input: [UInt8]) {
        let wrapped = #"{"version": 8, "sources": {}, "layers": ["# + String(decoding: input, as: UTF8.self) + "]}"
        guard let document = try? StyleDocument(style: Data(wrapped.utf8), url: "https://s.example/style.json") else { return }
        let features: [PropertiesFeature] = [
            PropertiesFeature(properties: ["name": .string("Москва"), "rank": .number(3), "class": .string("a"),
                                           "flag": .bool(true), "list": .array([.string("東京")]),
                                           "object": .object(["k": .string("القاهرة")]), "none": .null]),
            PropertiesFeature(properties: [:], id: .number(7), baseGeometryType: "Polygon", mayBeMulti: true),
        ]
        var glyphs = LabelGlyphs()
        for label in document.labelLayers {
            for feature in features { glyphs.add(feature, layer: label) }
        }
        check(glyphs)
    }

    static func check(_ glyphs: LabelGlyphs) {
        for (stack, ranges) in glyphs.needs.ranges {
            invariant(ranges.contains(rangeContaining: 0), "stack \(stack) draws without 0-255")
        }
    }
}
