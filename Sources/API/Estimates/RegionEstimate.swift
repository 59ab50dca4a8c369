import Packs
import Geo
import Plan

/// The `Estimate` (Packs' wire type, the body of `POST /v1/estimates`) of a plan whose documents
/// are in: tile counts per source and zoom (closed-form for boxes, budgeted sweeps for geometries,
/// see `CoverCounter`), the other resources by kind, and a byte estimate from the average stored
/// size of the same sources' tiles. Runs on a pool thread (sweeps and the size samples take time).
struct RegionEstimate {
    /// Geometry sweep rows per request, shared by the distinct clips of its sources.
    static let rowBudget = 1 << 16
    /// Fewest rows a clip gets however many there are (zooms 0…11 of any geometry fit in it).
    static let minimumRowBudget = 1 << 12
    /// Stored tiles read per source and zoom for the average size.
    static let sampleTilesPerZoom = 1000

    let plan: ResourcePlan
    let region: RegionDefinition
    let style: StyleDocument?

    private struct SourceCounts {
        var zooms: [CoverCounter.Count]
        var sampledTiles: Int64 = 0
        var sampledBytes: Int64 = 0
        /// Tiles times the average size of their own zoom, where that zoom has a sample.
        var bytesFromZoomAverages = 0.0
        /// Tiles of zooms without a sample, priced at the source's (or the overall) average.
        var tilesWithoutZoomAverage = 0
        var tiles: Int { zooms.reduce(0) { $0.addingSaturated($1.tiles) } }
    }

    func document(_ reader: any StoreReading & PackExporting) throws -> Estimate {
        let counts = tileCounts()
        var sources: [SourceCounts] = []
        for (pyramid, zooms) in zip(plan.pyramids, counts) {
            var source = SourceCounts(zooms: zooms)
            let ratio = Int64(pyramid.template.storedPixelRatio(for: pyramid.pixelRatio))
            for count in zooms {
                let sample = try reader.tileSizeSample(urlTemplate: pyramid.template.template, pixelRatio: ratio,
                                                       z: Int64(count.zoom), limit: Self.sampleTilesPerZoom)
                source.sampledTiles += sample.tiles
                source.sampledBytes += sample.bytes
                if sample.tiles > 0 {
                    source.bytesFromZoomAverages += Double(count.tiles) * Double(sample.bytes) / Double(sample.tiles)
                } else {
                    source.tilesWithoutZoomAverage = source.tilesWithoutZoomAverage.addingSaturated(count.tiles)
                }
            }
            sources.append(source)
        }
        let sampledTiles = sources.reduce(0) { $0 + $1.sampledTiles }
        let sampledBytes = sources.reduce(0) { $0 + $1.sampledBytes }
        var estimatedBytes: Double?
        if sampledTiles > 0 {
            let overallAverage = Double(sampledBytes) / Double(sampledTiles)
            estimatedBytes = sources.reduce(0.0) { total, source in
                let average = source.sampledTiles > 0 ? Double(source.sampledBytes) / Double(source.sampledTiles) : overallAverage
                return total + source.bytesFromZoomAverages + Double(source.tilesWithoutZoomAverage) * average
            }
        }
        let tiles = sources.reduce(0) { $0.addingSaturated($1.tiles) }
        let tileLimit = try reader.tileLimit()
        return Estimate(
            sources: zip(plan.pyramids, sources).map { sourceEstimate($0, $1) },
            tiles: Int64(tiles),
            exact: sources.allSatisfy { $0.zooms.allSatisfy(\.exact) },
            resources: resourceCounts(),
            expectedResources: Int64(plan.fixed.count.addingSaturated(tiles)),
            estimatedBytes: estimatedBytes.map { Int64(min($0.rounded(), 9.2e18)) },
            sampledTiles: estimatedBytes == nil ? 0 : sampledTiles,
            tileLimit: tileLimit,
            withinTileLimit: tileLimit.map { Int64(clamping: tiles) <= $0 } ?? true)
    }

    /// Counts per pyramid, in plan order. Pyramids over the same clip share one counter's work.
    private func tileCounts() -> [[CoverCounter.Count]] {
        var zoomsByClip: [LngLatBounds?: Set<Int>] = [:]
        for pyramid in plan.pyramids { zoomsByClip[pyramid.clip, default: []].formUnion(pyramid.zooms) }
        let budget = max(Self.rowBudget / max(zoomsByClip.count, 1), Self.minimumRowBudget)
        var countsByClip: [LngLatBounds?: [Int: CoverCounter.Count]] = [:]
        for (clip, zooms) in zoomsByClip {
            let counts = CoverCounter(region: region.area, within: clip).counts(zooms: zooms.sorted(), rowBudget: budget)
            countsByClip[clip] = Dictionary(counts.map { ($0.zoom, $0) }) { first, _ in first }
        }
        return plan.pyramids.map { pyramid in pyramid.zooms.compactMap { countsByClip[pyramid.clip]?[$0] } }
    }

    private func sourceEstimate(_ pyramid: TilePyramid, _ source: SourceCounts) -> Estimate.Source {
        let styleSource = style?.tileSources.first { $0.id == pyramid.sourceID }
        let type: String
        let tileSize: Int
        if let styleSource {
            type = styleSource.kind.rawValue
            tileSize = styleSource.tileSize
        } else {
            type = "tiles"
            if case .tiles(let template) = region.content { tileSize = template.tileSize } else { tileSize = 512 }
        }
        return Estimate.Source(
            source: pyramid.sourceID, type: type, tileSize: tileSize,
            minZoom: pyramid.zooms.first ?? 0, maxZoom: pyramid.zooms.last ?? 0, tiles: Int64(source.tiles),
            zooms: source.zooms.map { Estimate.Zoom(zoom: $0.zoom, tiles: Int64($0.tiles), exact: $0.exact) })
    }

    /// The fixed resources by kind; a `source` resource is a TileJSON when the style refers to it
    /// as one, else GeoJSON data.
    private func resourceCounts() -> Estimate.Resources {
        var tileJSONURLs: Set<String> = []
        for source in style?.tileSources ?? [] {
            if case .tileJSON(let url) = source.tiles { tileJSONURLs.insert(url) }
        }
        var counts = Estimate.Resources()
        for resource in plan.fixed {
            switch resource.kind {
            case .style: counts.styles += 1
            case .source where tileJSONURLs.contains(resource.url) || PMTilesSourceURL.archiveURL(ofKey: resource.url) != nil:
                counts.tilejsons += 1
            case .spriteImage, .spriteJSON: counts.sprites += 1
            case .glyphs: counts.glyphs += 1
            case .source, .image, .tile: counts.data += 1
            }
        }
        return counts
    }
}

extension Int {
    /// Sums of counts derived from user input stop at `Int.max` instead of trapping.
    func addingSaturated(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
