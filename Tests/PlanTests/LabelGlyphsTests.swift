import Foundation
import Geo
import Packs
import Testing
@testable import Plan

/// Which glyph ranges a symbol layer's labels need for given features: the text its expressions
/// can draw (exactly where the feature decides, every branch where it cannot), after
/// `text-transform`, with MapLibre's shaping extras, in UTF-16 code units.
@Suite struct LabelGlyphsTests {
    static func layer(_ layout: [String: Any], filter: Any? = nil, minzoom: Double? = nil, maxzoom: Double? = nil,
                      source: String = "s") throws -> LabelLayer {
        var object: [String: Any] = ["id": "l", "type": "symbol", "source": source, "source-layer": "places", "layout": layout]
        if let filter { object["filter"] = filter }
        if let minzoom { object["minzoom"] = minzoom }
        if let maxzoom { object["maxzoom"] = maxzoom }
        guard case .object(let json)? = StyleJSON.value(object) else { throw PlanError(.styleInvalid, "not JSON") }
        return try #require(LabelLayer(json))
    }

    static func feature(_ properties: [String: Any], type: String = "Point") -> PropertiesFeature {
        PropertiesFeature(properties: properties.compactMapValues { StyleJSON.value($0) }, baseGeometryType: type)
    }

    static let font = ["Noto Sans Regular"]

    /// The range starts one feature needs in the layer's (only) font stack.
    static func starts(_ layer: LabelLayer, _ features: [PropertiesFeature], stack: [String] = font) -> [Int] {
        var glyphs = LabelGlyphs()
        for feature in features { glyphs.add(feature, layer: layer) }
        return glyphs.needs[stack].starts
    }

    @Test func propertiesOfEveryScriptNeedTheirRanges() throws {
        let layer = try Self.layer(["text-field": ["get", "name"], "text-font": ["literal", Self.font]])
        #expect(Self.starts(layer, [Self.feature(["name": "Москва"])]) == [0, 0x400])
        #expect(Self.starts(layer, [Self.feature(["name": "Αθήνα"])]) == [0, 0x300])
        #expect(Self.starts(layer, [Self.feature(["name": "北京"])]) == [0, 0x4E00, 0x5300])
        // Beyond the BMP MapLibre walks UTF-16: the two surrogate ranges.
        #expect(Self.starts(layer, [Self.feature(["name": "𠀋"])]) == [0, 0xD800, 0xDC00])
        // Nothing drawn, nothing needed: not even 0-255.
        #expect(Self.starts(layer, [Self.feature(["ref": "A1"])]) == [])
        // A number is drawn as digits.
        #expect(Self.starts(layer, [Self.feature(["name": 4808])]) == [0])
    }

    @Test func arabicNeedsItsPresentationForms() throws {
        let layer = try Self.layer(["text-field": "{name}", "text-font": Self.font])
        // Basic letters shape into Forms-B (U+FE70…), lam-alef into its ligatures (U+FEF5…).
        #expect(Self.starts(layer, [Self.feature(["name": "القاهرة"])]) == [0, 0x600, 0xFE00])
        // Persian letters (پ, گ) have their forms in Forms-A (U+FB56…).
        #expect(Self.starts(layer, [Self.feature(["name": "پارک گل"])]) == [0, 0x600, 0xFB00, 0xFE00])
        let forms = ShapingExtras.shapedForms(of: [0x0644, 0x0627])
        #expect(forms.contains(0xFEFB) && forms.contains(0xFEFC), "lam + alef draws the lam-alef ligature")
        #expect(Set(ShapingExtras.arabicForms[0x0628] ?? []) == [0xFE8F, 0xFE90, 0xFE91, 0xFE92])
    }

    @Test func verticalPunctuationOnlyWhereLabelsCanTurnVertical() throws {
        let point = try Self.layer(["text-field": ["get", "name"], "text-font": Self.font])
        let line = try Self.layer(["text-field": ["get", "name"], "text-font": Self.font, "symbol-placement": "line"])
        let vertical = try Self.layer(["text-field": ["get", "name"], "text-font": Self.font,
                                       "text-writing-mode": ["vertical", "horizontal"]])
        let cjk = Self.feature(["name": "東京(とうきょう)"])
        // "(" → "︵" (U+FE35) only for labels that may be drawn vertically, with upright text.
        #expect(!Self.starts(point, [cjk]).contains(0xFE00))
        #expect(Self.starts(line, [cjk]).contains(0xFE00))
        #expect(Self.starts(vertical, [cjk]).contains(0xFE00))
        #expect(!Self.starts(line, [Self.feature(["name": "Main St (east)"])]).contains(0xFE00), "Latin text is never upright")
    }

    @Test func textTransformAndCaseOperators() throws {
        let upper = try Self.layer(["text-field": ["get", "name"], "text-font": Self.font, "text-transform": "uppercase"])
        // ŉ uppercases to ʼN: U+02BC joins (the original stays: case mappings differ in corners).
        #expect(Self.starts(upper, [Self.feature(["name": "ŉ"])]) == [0, 0x100, 0x200])
        let lower = try Self.layer(["text-field": ["downcase", ["get", "name"]], "text-font": Self.font])
        var glyphs = LabelGlyphs()
        glyphs.add(Self.feature(["name": "ΟΔΟΣ"]), layer: lower)
        #expect(glyphs.needs[Self.font].starts == [0, 0x300])
        let texts = LabelExpression(feature: Self.feature(["name": "ΟΔΟΣ"])).evaluate(lower.textField).texts.map(\.text)
        #expect(texts.contains { $0.contains("ς") } && texts.contains { $0.contains("σ") }, "both sigmas: \(texts)")
    }

    @Test func expressionsPickTheBranchTheFeatureDecides() throws {
        let layer = try Self.layer([
            "text-field": ["case", ["==", ["get", "class"], "city"], ["get", "name:ru"],
                           ["match", ["get", "class"], ["town", "village"], ["get", "name:el"], ["get", "name"]]],
            "text-font": Self.font,
        ])
        let properties: [String: Any] = ["name:ru": "Москва", "name:el": "Αθήνα", "name": "Cairo"]
        var city = properties
        city["class"] = "city"
        var town = properties
        town["class"] = "town"
        var other = properties
        other["class"] = "hamlet"
        #expect(Self.starts(layer, [Self.feature(city)]) == [0, 0x400])
        #expect(Self.starts(layer, [Self.feature(town)]) == [0, 0x300])
        #expect(Self.starts(layer, [Self.feature(other)]) == [0])
        // The zoom cannot be decided: every output counts.
        let zoomed = try Self.layer(["text-field": ["step", ["zoom"], ["get", "name:ru"], 8, ["get", "name:el"]],
                                     "text-font": Self.font])
        #expect(Self.starts(zoomed, [Self.feature(properties)]) == [0, 0x300, 0x400])
        // coalesce: the first present property; a missing one falls through.
        let coalesced = try Self.layer(["text-field": ["coalesce", ["get", "name:ar"], ["get", "name:ru"], ["get", "name"]],
                                        "text-font": Self.font])
        #expect(Self.starts(coalesced, [Self.feature(properties)]) == [0, 0x400])
        // let / var, concat, to-string, number-format.
        let composed = try Self.layer(["text-field": ["let", "n", ["get", "name:el"],
                                                      ["concat", ["var", "n"], " ", ["to-string", ["get", "rank"]], " ",
                                                       ["number-format", ["get", "rank"], ["literal", ["locale", "ar"]]]]],
                                       "text-font": Self.font])
        let starts = Self.starts(composed, [Self.feature(["name:el": "Πάτρα", "rank": 3])])
        #expect(starts.contains(0x300) && starts.contains(0x600) && starts.contains(0))
    }

    @Test func formatSectionsUseTheirOwnFonts() throws {
        let layer = try Self.layer([
            "text-field": ["format", ["get", "name"], [:] as [String: Any],
                           "\n", [:] as [String: Any],
                           ["get", "name:zh"], ["text-font": ["literal", ["Noto Sans Bold"]], "font-scale": 0.8]],
            "text-font": ["literal", Self.font],
        ])
        var glyphs = LabelGlyphs()
        glyphs.add(Self.feature(["name": "Αθήνα", "name:zh": "雅典"]), layer: layer)
        #expect(glyphs.needs[Self.font].starts == [0, 0x300])
        #expect(glyphs.needs[["Noto Sans Bold"]].starts == [0, 0x5100, 0x9600])
    }

    @Test func textFontExpressionsShareTheText() throws {
        // A data-driven text-font: every stack it can output gets the text.
        let layer = try Self.layer(["text-field": ["get", "name"],
                                    "text-font": ["case", ["<", ["length", ["get", "name"]], 6],
                                                  ["literal", ["Noto Sans Bold"]], ["literal", Self.font]]])
        #expect(Set(layer.fonts) == [Self.font, ["Noto Sans Bold"]])
        var glyphs = LabelGlyphs()
        glyphs.add(Self.feature(["name": "Киев"]), layer: layer)
        #expect(glyphs.needs[Self.font].starts == [0, 0x400] && glyphs.needs[["Noto Sans Bold"]].starts == [0, 0x400])
        // No text-font: MapLibre's default stack.
        let plain = try Self.layer(["text-field": "{name}"])
        #expect(plain.fonts == [FontStackCollector.defaultStack])
    }

    @Test func filtersRejectOnlyWhatTheySurelyReject() throws {
        let legacy = try Self.layer(["text-field": ["get", "name"], "text-font": Self.font],
                                    filter: ["all", ["==", "$type", "Point"], ["in", "class", "city", "town"], ["!has", "hidden"]])
        let name: [String: Any] = ["name": "Москва"]
        #expect(Self.starts(legacy, [Self.feature(name.merging(["class": "city"]) { $1 })]) == [0, 0x400])
        #expect(Self.starts(legacy, [Self.feature(name.merging(["class": "river"]) { $1 })]) == [])
        #expect(Self.starts(legacy, [Self.feature(name.merging(["class": "city", "hidden": true]) { $1 })]) == [])
        #expect(Self.starts(legacy, [Self.feature(name.merging(["class": "city"]) { $1 }, type: "Polygon")]) == [])
        let expression = try Self.layer(["text-field": ["get", "name"], "text-font": Self.font],
                                        filter: ["all", [">=", ["get", "rank"], 3], ["!=", ["get", "class"], "river"]])
        #expect(Self.starts(expression, [Self.feature(name.merging(["rank": 5, "class": "city"]) { $1 })]) == [0, 0x400])
        #expect(Self.starts(expression, [Self.feature(name.merging(["rank": 1]) { $1 })]) == [])
        // The zoom or feature state cannot be decided: kept.
        let zoom = try Self.layer(["text-field": ["get", "name"], "text-font": Self.font], filter: [">", ["zoom"], 12])
        #expect(Self.starts(zoom, [Self.feature(name)]) == [0, 0x400])
        // geometry-type may say Multi… for vector tile features: kept.
        let multi = try Self.layer(["text-field": ["get", "name"], "text-font": Self.font], filter: ["==", ["geometry-type"], "Point"])
        let unsure = PropertiesFeature(properties: ["name": .string("Москва")], baseGeometryType: "Point", mayBeMulti: true)
        #expect(Self.starts(multi, [unsure]) == [0, 0x400])
    }

    @Test func legacyFunctionsAndTokens() throws {
        let tokens = try Self.layer(["text-field": "{name:ru} ({ref})", "text-font": Self.font])
        #expect(Self.starts(tokens, [Self.feature(["name:ru": "Тула", "ref": "Ⅳ"])]) == [0, 0x400, 0x2100])
        let function = try Self.layer(["text-field": ["type": "identity", "property": "name"], "text-font": Self.font])
        #expect(Self.starts(function, [Self.feature(["name": "Αθήνα"])]) == [0, 0x300])
        let stops = try Self.layer(["text-field": ["stops": [[0, "{name}"], [10, "{name:ru}"]]], "text-font": Self.font])
        #expect(Self.starts(stops, [Self.feature(["name": "Αθήνα", "name:ru": "Афины"])]) == [0, 0x300, 0x400])
        #expect(LegacyStyleValues.tokens("no tokens") == .string("no tokens"))
    }

    @Test func layersAreLaidOutAtTheirZoomsAndOverzoomed() throws {
        let layer = try Self.layer(["text-field": "x"], minzoom: 6, maxzoom: 10)
        #expect(!layer.isLaidOut(tileZoom: 5, sourceMaxZoom: 14))
        #expect(layer.isLaidOut(tileZoom: 6, sourceMaxZoom: 14))
        #expect(layer.isLaidOut(tileZoom: 9, sourceMaxZoom: 14))
        #expect(!layer.isLaidOut(tileZoom: 10, sourceMaxZoom: 14))
        // A source's maxzoom tiles are laid out at every zoom above it.
        #expect(layer.isLaidOut(tileZoom: 4, sourceMaxZoom: 4), "z4 tiles of a source ending at z4 show at z6-10 too")
        let deep = try Self.layer(["text-field": "x"], minzoom: 15)
        #expect(deep.isLaidOut(tileZoom: 14, sourceMaxZoom: 14) && !deep.isLaidOut(tileZoom: 13, sourceMaxZoom: 14))
        // Layers that draw no text are not label layers.
        #expect(LabelLayer(["type": .string("symbol"), "id": .string("i"), "source": .string("s"),
                            "layout": .object(["icon-image": .string("dot")])]) == nil)
        #expect(LabelLayer(["type": .string("symbol"), "id": .string("i"), "source": .string("s"),
                            "layout": .object(["text-field": .string("x"), "text-font": .array([])])]) == nil)
    }

    @Test func geoJSONFeaturesOutsideTheViewableAreaAreLeftOut() throws {
        let region = TileRegionFixtures.bounds(west: 10, south: 45, east: 11, north: 46)
        let area = LabelArea(region: region, minZoom: 8)
        let document = try #require(GlyphSubset.geoJSONDocument(Array("""
            {"type": "FeatureCollection", "features": [
              {"type": "Feature", "properties": {"name": "Москва"}, "geometry": {"type": "Point", "coordinates": [10.5, 45.5]}},
              {"type": "Feature", "properties": {"name": "Αθήνα"}, "geometry": {"type": "Point", "coordinates": [10.5, 44.0]}},
              {"type": "Feature", "properties": {"name": "東京"}, "geometry": {"type": "LineString", "coordinates": [[30, 45], [31, 46]]}}
            ]}
            """.utf8)))
        var names: [String] = []
        GeoJSONFeatures.forEach(in: document, area: area) { names.append($0.property("name")?.stringValue ?? "") }
        // 44.0 is within two z8 tiles (~1.4° of latitude here) of the region's cover; 30°E is not.
        #expect(names == ["Москва", "Αθήνα"])
        var everywhere: [String] = []
        GeoJSONFeatures.forEach(in: document, area: LabelArea(region: region, minZoom: 0)) { everywhere.append($0.property("name")?.stringValue ?? "") }
        #expect(everywhere.count == 3, "at zoom 0 the whole world can be on screen")
    }
}

enum TileRegionFixtures {
    static func bounds(west: Double, south: Double, east: Double, north: Double) -> TileRegion {
        .bounds(try! LngLatBounds(west: west, south: south, east: east, north: north))
    }
}
