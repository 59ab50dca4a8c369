import Foundation
import Geo

/// Builds a region's `ResourcePlan` as its documents arrive over the network:
/// (1) the region alone — complete for a template region, just the style for a style region;
/// (2) plus the style — the TileJSON URLs still needed (`missingTileJSONURLs`);
/// (3) plus each TileJSON — complete when none is missing (`plan.isPrecise`).
/// `plan` can be read at every stage; it holds no I/O and no tiles.
public struct PlanBuilder: Sendable {
    /// The source id of a template region's only pyramid.
    public static let templateSourceID = "tiles"

    public let region: RegionDefinition
    public let limits: PlanLimits
    public private(set) var style: StyleDocument?
    private var tilesets: [String: Tileset] = [:]

    public init(region: RegionDefinition, limits: PlanLimits = .init()) {
        self.region = region
        self.limits = limits
    }

    /// Stage 2: the style document fetched from `region.styleURL`.
    public mutating func addStyle(_ data: Data) throws(PlanError) {
        guard let url = region.styleURL else {
            throw PlanError(.styleInvalid, "a tiles region has no style")
        }
        style = try StyleDocument(style: data, url: url, limits: limits)
    }

    /// Every TileJSON URL the style refers to and that has not been added yet, sorted.
    public var missingTileJSONURLs: [String] {
        Array(Set(tileJSONURLs).subtracting(tilesets.keys)).sorted()
    }

    /// Stage 3: one TileJSON document fetched from `url` (one of `missingTileJSONURLs`).
    public mutating func addTileJSON(_ data: Data, url: String) throws(PlanError) {
        guard tileJSONURLs.contains(url) else {
            throw PlanError(.unknownTileJSON, "the style does not refer to this TileJSON", url: url)
        }
        tilesets[url] = try Tileset(tileJSON: data, url: url, limits: limits)
    }

    /// The plan as far as the documents added so far allow.
    public var plan: ResourcePlan {
        switch region.content {
        case .tiles(let source):
            let lower = Int(region.minZoom.rounded(.down))
            let upper = Int((region.maxZoom ?? region.minZoom).rounded(.down))
            let pyramid = TilePyramid(
                sourceID: Self.templateSourceID, template: source.template, zooms: Array(lower...max(lower, upper)),
                area: region.area, clip: nil, pixelRatio: region.pixelRatio)
            return ResourcePlan(fixed: [], pyramids: [pyramid], pendingDocuments: 0)
        case .archive(let url):
            return archivePlan(key: PMTilesSourceURL.key(forArchive: url))
        case .style(let url):
            let styleResource = PlannedResource(kind: .style, url: url)
            guard let style else {
                return ResourcePlan(fixed: [styleResource], pyramids: [], pendingDocuments: 1)
            }
            return ResourcePlan(
                fixed: fixedResources(styleResource, style), pyramids: pyramids(style),
                pendingDocuments: missingTileJSONURLs.count, glyphSubset: glyphSubset(style))
        }
    }

    private var tileJSONURLs: [String] {
        if case .archive(let url) = region.content { return [PMTilesSourceURL.key(forArchive: url)] }
        return style?.tileSources.compactMap {
            if case .tileJSON(let url) = $0.tiles { url } else { nil }
        } ?? []
    }

    /// An archive region: the TileJSON derived from the archive (stored, so the pack serves and
    /// exports it), then its tiles at the region's zooms as given (tile zooms, as for a template
    /// region), within the archive's zooms and bounds.
    private func archivePlan(key: String) -> ResourcePlan {
        let tileJSON = PlannedResource(kind: .source, url: key)
        guard let tileset = tilesets[key] else { return ResourcePlan(fixed: [tileJSON], pyramids: [], pendingDocuments: 1) }
        let lower = max(Int(region.minZoom.rounded(.down)), tileset.zoomRange.lowerBound)
        let upper = min(region.maxZoom.map { Int($0.rounded(.down)) } ?? tileset.zoomRange.upperBound, tileset.zoomRange.upperBound)
        let pyramids = lower <= upper ? [TilePyramid(
            sourceID: Self.templateSourceID, template: tileset.template, zooms: Array(lower...upper), area: region.area,
            clip: tileset.bounds, pixelRatio: region.pixelRatio)] : []
        return ResourcePlan(fixed: [tileJSON], pyramids: pyramids, pendingDocuments: 0)
    }

    private func fixedResources(_ styleResource: PlannedResource, _ style: StyleDocument) -> [PlannedResource] {
        var resources = [styleResource]
        resources += tileJSONURLs.map { PlannedResource(kind: .source, url: $0) }
        resources += style.geoJSONURLs.map { PlannedResource(kind: .source, url: $0) }
        resources += style.imageURLs.map { PlannedResource(kind: .image, url: $0) }
        resources += style.spriteURLs.flatMap(SpriteFiles.resources(base:))
        if let template = style.glyphsTemplate, region.glyphs == .all {
            let starts = GlyphRanges.starts(includeIdeographs: region.includeIdeographs)
            for stack in style.fontStacks {
                resources += starts.map {
                    PlannedResource(kind: .glyphs, url: GlyphRanges.url(template: template, fontStack: stack, rangeStart: $0))
                }
            }
        }
        // The offline database keys resources by URL: one URL is one resource, whatever refers to it.
        var seen: Set<String> = []
        return resources.filter { seen.insert($0.url).inserted }
    }

    /// With `"glyphs": "region"`, the glyph ranges are left out of the fixed resources and chosen
    /// once the tiles and GeoJSON are stored: what decides them.
    private func glyphSubset(_ style: StyleDocument) -> GlyphSubset? {
        guard region.glyphs == .region, let template = style.glyphsTemplate, !style.fontStacks.isEmpty else { return nil }
        var sources: [GlyphSubset.TileSource] = []
        for source in style.tileSources where source.kind == .vector {
            guard let tileset = tileset(of: source) else { continue }
            sources.append(GlyphSubset.TileSource(
                sourceID: source.id, urlTemplate: tileset.template.template,
                pixelRatio: tileset.template.storedPixelRatio(for: region.pixelRatio), maxZoom: tileset.zoomRange.upperBound))
        }
        return GlyphSubset(
            template: template, stacks: style.fontStacks, starts: GlyphRanges.starts(includeIdeographs: region.includeIdeographs),
            layers: style.labelLayers, tileSources: sources, geoJSONSources: style.geoJSONSources,
            area: LabelArea(region: region.area, minZoom: region.minZoom))
    }

    /// One pyramid per distinct (template, pixel ratio stored, clip); sources sharing a template
    /// share tiles in MapLibre's `tiles` table, so their zooms are merged rather than counted twice.
    private func pyramids(_ style: StyleDocument) -> [TilePyramid] {
        var pyramids: [TilePyramid] = []
        for source in style.tileSources {
            guard let tileset = tileset(of: source) else { continue }
            let zooms = TilePyramid.coveringZooms(
                minZoom: region.minZoom, maxZoom: region.maxZoom, kind: source.kind, tileSize: source.tileSize,
                sourceRange: tileset.zoomRange)
            guard !zooms.isEmpty else { continue }
            if let index = pyramids.firstIndex(where: { $0.template == tileset.template }) {
                // One template is one set of rows in MapLibre's `tiles` table whatever its bounds, so
                // two pyramids over it would count shared tiles twice and the pack could never
                // complete. The merged pyramid takes the smallest box holding both clips.
                let existing = pyramids[index]
                pyramids[index] = TilePyramid(
                    sourceID: existing.sourceID, template: existing.template, zooms: existing.zooms + zooms,
                    area: region.area, clip: Self.enclosingClip(existing.clip, tileset.bounds),
                    pixelRatio: region.pixelRatio)
            } else {
                pyramids.append(
                    TilePyramid(
                        sourceID: source.id, template: tileset.template, zooms: zooms, area: region.area,
                        clip: tileset.bounds, pixelRatio: region.pixelRatio))
            }
        }
        return pyramids
    }

    /// A source's inline tileset, or its TileJSON's once added.
    private func tileset(of source: StyleDocument.TileSource) -> Tileset? {
        switch source.tiles {
        case .inline(let inline): inline
        case .tileJSON(let url): tilesets[url]
        }
    }

    /// The smallest box holding both clips; `nil` (no clip) when either is unclipped, or when one
    /// crosses the antimeridian and a single box could not hold both without guessing.
    static func enclosingClip(_ a: LngLatBounds?, _ b: LngLatBounds?) -> LngLatBounds? {
        guard let a, let b else { return nil }
        if a == b { return a }
        if a.crossesAntimeridian || b.crossesAntimeridian { return nil }
        return try? LngLatBounds(
            west: min(a.west, b.west), south: min(a.south, b.south),
            east: max(a.east, b.east), north: max(a.north, b.north))
    }
}
