import Foundation
import Geo
import Packs

/// The glyph ranges of a style region with `"glyphs": "region"`, to be chosen once its tiles and
/// GeoJSON are stored: the candidates (what `"all"` downloads: every range of every font stack,
/// ideographs as the region says), and what decides among them — the label layers, which tiles
/// and GeoJSON sources they read, and the area whose GeoJSON features can be seen.
public struct GlyphSubset: Hashable, Sendable {
    /// A style source whose tiles labels read.
    public struct TileSource: Hashable, Sendable {
        public let sourceID: String
        /// The template the tiles are stored under, and their stored pixel ratio.
        public let urlTemplate: String
        public let pixelRatio: Int
        /// The source's own maxzoom: its tiles there are also laid out at every zoom above.
        public let maxZoom: Int
    }

    /// The style's `glyphs` template.
    public let template: String
    public let stacks: [[String]]
    /// First code points of the candidate ranges of every stack.
    public let starts: [Int]
    public let layers: [LabelLayer]
    public let tileSources: [TileSource]
    public let geoJSONSources: [GeoJSONLabelSource]
    public let area: LabelArea

    public init(template: String, stacks: [[String]], starts: [Int], layers: [LabelLayer], tileSources: [TileSource],
                geoJSONSources: [GeoJSONLabelSource], area: LabelArea) {
        self.template = template
        self.stacks = stacks
        self.starts = starts
        self.layers = layers
        let read = Set(layers.map(\.source))
        self.tileSources = tileSources.filter { read.contains($0.sourceID) }
        self.geoJSONSources = geoJSONSources.filter { read.contains($0.id) }
        self.area = area
    }

    /// Every candidate range as a resource, stack by stack (what `"all"` would download).
    public var candidates: [PlannedResource] {
        var seen: Set<String> = []
        return stacks.flatMap { stack in
            starts.map { PlannedResource(kind: .glyphs, url: GlyphRanges.url(template: template, fontStack: stack, rangeStart: $0)) }
        }.filter { seen.insert($0.url).inserted }
    }

    /// The candidates `needs` calls for, and those it leaves out.
    public func resources(for needs: GlyphNeeds) -> (needed: [PlannedResource], skipped: [PlannedResource]) {
        var needed: [PlannedResource] = []
        var skipped: [PlannedResource] = []
        var seen: Set<String> = []
        for stack in stacks {
            let ranges = needs[stack]
            for start in starts {
                let resource = PlannedResource(kind: .glyphs, url: GlyphRanges.url(template: template, fontStack: stack, rangeStart: start))
                guard seen.insert(resource.url).inserted else { continue }
                if ranges.contains(rangeContaining: start) { needed.append(resource) } else { skipped.append(resource) }
            }
        }
        return (needed, skipped)
    }

    /// The label layers that read stored tiles of `urlTemplate`, by source layer, each with its
    /// source's maxzoom.
    public func tileLayers(urlTemplate: String) -> [String: [(layer: LabelLayer, sourceMaxZoom: Int)]] {
        var bySourceLayer: [String: [(layer: LabelLayer, sourceMaxZoom: Int)]] = [:]
        for source in tileSources where source.urlTemplate == urlTemplate {
            for layer in layers where layer.source == source.sourceID {
                guard let sourceLayer = layer.sourceLayer else { continue }
                bySourceLayer[sourceLayer, default: []].append((layer, source.maxZoom))
            }
        }
        return bySourceLayer
    }

    /// The templates whose stored tiles labels read.
    public var urlTemplates: Set<String> { Set(tileSources.map(\.urlTemplate)) }

    /// What the labels of one GeoJSON source's document need.
    public func glyphs(ofGeoJSON document: JSONValue, source: GeoJSONLabelSource) -> LabelGlyphs {
        var glyphs = LabelGlyphs()
        let reading = layers.filter { $0.source == source.id }
        guard !reading.isEmpty else { return glyphs }
        GeoJSONFeatures.forEach(in: document, area: area) { feature in
            for layer in reading { glyphs.add(feature, layer: layer) }
        }
        return glyphs
    }

    /// A stored GeoJSON body as a document (nil: not JSON, or nested past any real GeoJSON).
    public static func geoJSONDocument(_ bytes: [UInt8]) -> JSONValue? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else { return nil }
        return StyleJSON.value(object, depth: 32)
    }
}
