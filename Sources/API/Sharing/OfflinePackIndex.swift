import Foundation
import Packs
import Plan

/// What one pack's offline URLs map to in the store: the style (if the pack has one), and for
/// each tile source the `tiles` key (stored URL template and pixel ratio) its tiles were stored
/// under and the deepest zoom the pack holds of it. Built on a pool thread from the pack's stored
/// rows; read on the loop.
struct OfflinePackIndex: Sendable {
    struct TileSource: Sendable {
        let tileset: Tileset
        /// The `tiles.pixel_ratio` the download stored this template's tiles with.
        let pixelRatio: Int64
        /// The stored TileJSON, nil for inline tiles and tiles regions.
        let tileJSONURL: String?
        /// The deepest zoom of the source the pack holds — its download plan's, for the source's
        /// tile size (`TilePyramid.coveringZooms`: a 512 px source one zoom above 256 px tiles) —
        /// which the served documents give as `maxzoom`, so clients overzoom past it instead of
        /// asking for tiles the pack cannot have. nil: no tile of it is planned.
        let maxZoom: Int?
    }

    /// Why a pack cannot be served (yet): answered as 404 with this detail.
    struct Unavailable: Error {
        let detail: String
    }

    let packID: Int64
    /// nil for a tiles region.
    let style: OfflineStyle?
    let tileSources: [String: TileSource]

    /// Each tile source's `maxZoom`, by source id.
    var maxZooms: [String: Int] { tileSources.compactMapValues(\.maxZoom) }

    /// Reads the pack's region, its stored style and TileJSONs. Throws `Unavailable` for an
    /// unknown pack or one whose style is not stored yet.
    static func load(packID: Int64, from reader: any StoreReading & PackExporting) throws -> OfflinePackIndex {
        guard let record = try reader.pack(packID) else { throw Unavailable(detail: "no pack with id \(packID)") }
        let region = try RegionDefinition(stored: record.definition)
        // The pack's plan from its stored documents: the zooms its tiles were downloaded at.
        var plan = PlanBuilder(region: region)
        switch region.content {
        case .tiles(let source):
            let tileset = Tileset(template: source.template)
            let ratio = Int64(source.template.storedPixelRatio(for: region.pixelRatio))
            return OfflinePackIndex(packID: packID, style: nil, tileSources: [PlanBuilder.templateSourceID: TileSource(
                tileset: tileset, pixelRatio: ratio, tileJSONURL: nil, maxZoom: plan.deepestZoom(of: tileset))])
        case .archive(let url):
            // The TileJSON derived from the archive, stored under its key like any TileJSON.
            let key = PMTilesSourceURL.key(forArchive: url)
            guard let tileset = try storedTileset(key, packID: packID, reader, adding: &plan) else {
                throw Unavailable(detail: "pack \(packID) holds no TileJSON of its archive yet")
            }
            let ratio = Int64(tileset.template.storedPixelRatio(for: region.pixelRatio))
            return OfflinePackIndex(packID: packID, style: nil, tileSources: [PlanBuilder.templateSourceID: TileSource(
                tileset: tileset, pixelRatio: ratio, tileJSONURL: key, maxZoom: plan.deepestZoom(of: tileset))])
        case .style(let styleURL):
            guard let body = try reader.resource(.resource(url: styleURL, kind: .style), linkedTo: packID)?.body else {
                throw Unavailable(detail: "pack \(packID) holds no style yet")
            }
            let data = Data(try body.decoded())
            let style = try OfflineStyle(style: data, url: styleURL)
            try? plan.addStyle(data)
            var tilesets: [String: (tileset: Tileset, tileJSONURL: String?)] = [:]
            for (id, content) in style.sources {
                switch content {
                case .data: continue
                case .inline(let inline): tilesets[id] = (inline, nil)
                case .tileJSON(let url):
                    // A TileJSON the download has not stored yet: its tiles are not there either.
                    guard let parsed = try storedTileset(url, packID: packID, reader, adding: &plan) else { continue }
                    tilesets[id] = (parsed, url)
                }
            }
            let tileSources = tilesets.mapValues { tileset, url in
                TileSource(tileset: tileset, pixelRatio: Int64(tileset.template.storedPixelRatio(for: region.pixelRatio)),
                           tileJSONURL: url, maxZoom: plan.deepestZoom(of: tileset))
            }
            return OfflinePackIndex(packID: packID, style: style, tileSources: tileSources)
        }
    }
}

/// The stored TileJSON `url` of the pack, parsed (and added to `plan`); nil when it is not stored
/// or unreadable.
private func storedTileset(_ url: String, packID: Int64, _ reader: any StoreReading & PackExporting,
                           adding plan: inout PlanBuilder) throws -> Tileset? {
    guard let stored = try reader.resource(.resource(url: url, kind: .source), linkedTo: packID)?.body else { return nil }
    let data = Data(try stored.decoded())
    try? plan.addTileJSON(data, url: url)
    return try? Tileset(tileJSON: data, url: url)
}

private extension PlanBuilder {
    /// The deepest zoom the plan downloads of `tileset`'s template (sources sharing a template
    /// share its tiles), nil when it plans none.
    func deepestZoom(of tileset: Tileset) -> Int? {
        plan.pyramids.filter { $0.template == tileset.template }.compactMap { $0.zooms.max() }.max()
    }
}

/// Recently built indexes by pack id, so a burst of tile requests parses the style once. Loop
/// thread only. An entry lives `lifetime`: a pack whose style changed (an update) or that was
/// removed is seen at most that late, and serving stays correct meanwhile because every row is
/// read with its link to the pack (a removed pack's tiles read as 404 at once).
final class OfflinePackIndexCache {
    private var entries: [Int64: (index: OfflinePackIndex, expires: ContinuousClock.Instant)] = [:]
    let lifetime: Duration
    let capacity: Int

    init(lifetime: Duration = .seconds(5), capacity: Int = 256) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    func index(of packID: Int64) -> OfflinePackIndex? {
        guard let entry = entries[packID] else { return nil }
        guard entry.expires > .now else {
            entries[packID] = nil
            return nil
        }
        return entry.index
    }

    func remove(_ packID: Int64) {
        entries[packID] = nil
    }

    func insert(_ index: OfflinePackIndex) {
        if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
        entries[index.packID] = (index, .now + lifetime)
    }
}
