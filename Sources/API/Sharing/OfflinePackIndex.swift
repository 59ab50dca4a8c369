import Foundation
import Packs
import Plan

/// What one pack's offline URLs map to in the store: the style (if the pack has one), and for
/// each tile source the `tiles` key (stored URL template and pixel ratio) its tiles were stored
/// under. Built on a pool thread from the pack's stored rows; read on the loop.
struct OfflinePackIndex: Sendable {
    struct TileSource: Sendable {
        let tileset: Tileset
        /// The `tiles.pixel_ratio` the download stored this template's tiles with.
        let pixelRatio: Int64
        /// The stored TileJSON, nil for inline tiles and tiles regions.
        let tileJSONURL: String?
    }

    /// Why a pack cannot be served (yet): answered as 404 with this detail.
    struct Unavailable: Error {
        let detail: String
    }

    let packID: Int64
    /// nil for a tiles region.
    let style: OfflineStyle?
    let tileSources: [String: TileSource]

    /// Reads the pack's region, its stored style and TileJSONs. Throws `Unavailable` for an
    /// unknown pack or one whose style is not stored yet.
    static func load(packID: Int64, from reader: any StoreReading & PackExporting) throws -> OfflinePackIndex {
        guard let record = try reader.pack(packID) else { throw Unavailable(detail: "no pack with id \(packID)") }
        let region = try RegionDefinition(stored: record.definition)
        switch region.content {
        case .tiles(let source):
            let tileset = Tileset(template: source.template)
            let ratio = Int64(source.template.storedPixelRatio(for: region.pixelRatio))
            return OfflinePackIndex(packID: packID, style: nil,
                                    tileSources: [PlanBuilder.templateSourceID: TileSource(tileset: tileset, pixelRatio: ratio, tileJSONURL: nil)])
        case .archive(let url):
            // The TileJSON derived from the archive, stored under its key like any TileJSON.
            let key = PMTilesSourceURL.key(forArchive: url)
            guard let tileset = try storedTileset(key, packID: packID, reader) else {
                throw Unavailable(detail: "pack \(packID) holds no TileJSON of its archive yet")
            }
            let ratio = Int64(tileset.template.storedPixelRatio(for: region.pixelRatio))
            return OfflinePackIndex(packID: packID, style: nil,
                                    tileSources: [PlanBuilder.templateSourceID: TileSource(tileset: tileset, pixelRatio: ratio, tileJSONURL: key)])
        case .style(let styleURL):
            guard let body = try reader.resource(.resource(url: styleURL, kind: .style), linkedTo: packID)?.body else {
                throw Unavailable(detail: "pack \(packID) holds no style yet")
            }
            let style = try OfflineStyle(style: Data(try body.decoded()), url: styleURL)
            var tileSources: [String: TileSource] = [:]
            for (id, content) in style.sources {
                let tileset: Tileset
                var tileJSONURL: String?
                switch content {
                case .data: continue
                case .inline(let inline): tileset = inline
                case .tileJSON(let url):
                    // A TileJSON the download has not stored yet: its tiles are not there either.
                    guard let parsed = try storedTileset(url, packID: packID, reader) else { continue }
                    tileset = parsed
                    tileJSONURL = url
                }
                let ratio = Int64(tileset.template.storedPixelRatio(for: region.pixelRatio))
                tileSources[id] = TileSource(tileset: tileset, pixelRatio: ratio, tileJSONURL: tileJSONURL)
            }
            return OfflinePackIndex(packID: packID, style: style, tileSources: tileSources)
        }
    }
}

/// The stored TileJSON `url` of the pack, parsed; nil when it is not stored or unreadable.
private func storedTileset(_ url: String, packID: Int64, _ reader: any StoreReading & PackExporting) throws -> Tileset? {
    guard let stored = try reader.resource(.resource(url: url, kind: .source), linkedTo: packID)?.body else { return nil }
    return try? Tileset(tileJSON: Data(try stored.decoded()), url: url)
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
