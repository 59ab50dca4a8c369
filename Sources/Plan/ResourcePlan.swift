/// Everything a region needs, as far as it is known: fixed resources (style, TileJSONs, GeoJSON,
/// images, sprites, glyphs) and one tile pyramid per distinct tile source.
///
/// Iterating yields resources in a stable order — fixed ones first, then tiles source by
/// source, zoom by zoom, row by row — so two runs over the same documents agree, and a
/// downloader can walk `pyramids` → `zooms` → `cover(zoom:).spans` itself to skip what it has.
public struct ResourcePlan: Sequence, Sendable {
    public let fixed: [PlannedResource]
    public let pyramids: [TilePyramid]
    /// Documents still to fetch before the plan is complete (the style, then TileJSONs).
    public let pendingDocuments: Int
    /// With `"glyphs": "region"`: the glyph ranges still to choose (not in `fixed`).
    public let glyphSubset: GlyphSubset?

    public init(fixed: [PlannedResource], pyramids: [TilePyramid], pendingDocuments: Int, glyphSubset: GlyphSubset? = nil) {
        self.fixed = fixed
        self.pyramids = pyramids
        self.pendingDocuments = pendingDocuments
        self.glyphSubset = glyphSubset
    }

    /// True once the style and every TileJSON are in and no glyph range is left to choose:
    /// `expectedResources` is then final.
    public var isPrecise: Bool { pendingDocuments == 0 && glyphSubset == nil }

    /// The plan with every candidate glyph range among the fixed resources, as `"glyphs": "all"`
    /// has them (for a download that cannot choose: a cluster's units).
    public var withEveryGlyphRange: ResourcePlan {
        guard let glyphSubset else { return self }
        var seen = Set(fixed.map(\.url))
        let glyphs = glyphSubset.candidates.filter { seen.insert($0.url).inserted }
        return ResourcePlan(fixed: fixed + glyphs, pyramids: pyramids, pendingDocuments: pendingDocuments)
    }

    /// Tile counts per source and zoom, computed (never enumerated).
    public var tileCounts: [TileCount] { pyramids.flatMap(\.tileCounts) }

    /// All tiles, saturating at `Int.max`.
    public var expectedTiles: Int {
        pyramids.reduce(0) { $0.saturatingAdd($1.tileCount) }
    }

    /// Fixed resources plus tiles, saturating at `Int.max`. While not precise this counts only
    /// what is known, like MapLibre's `requiredResourceCount`.
    public var expectedResources: Int {
        fixed.count.saturatingAdd(expectedTiles)
    }

    public func makeIterator() -> Iterator { Iterator(plan: self) }

    public struct Iterator: IteratorProtocol {
        let plan: ResourcePlan
        private var fixedIndex = 0
        private var pyramidIndex = 0
        private var tiles: TilePyramid.Resources.Iterator?

        init(plan: ResourcePlan) {
            self.plan = plan
        }

        public mutating func next() -> PlannedResource? {
            if fixedIndex < plan.fixed.count {
                defer { fixedIndex += 1 }
                return plan.fixed[fixedIndex]
            }
            while pyramidIndex < plan.pyramids.count {
                if tiles == nil { tiles = plan.pyramids[pyramidIndex].resources.makeIterator() }
                if let resource = tiles?.next() { return resource }
                tiles = nil
                pyramidIndex += 1
            }
            return nil
        }
    }
}
