import Packs
import Plan
import TileFormats

/// The labels of stored vector tiles, read on a reading thread: each tile body is inflated
/// (zlib as stored, then gzip as the server may have sent it), decoded — only the source layers
/// some label layer reads — and every feature handed to the label layers laid out at the tile's
/// zoom. A tile that does not decode is skipped and counted: MapLibre cannot draw it either.
public struct StoredTileLabels: Sendable {
    public let subset: GlyphSubset
    /// Per template, the label layers by source layer (with their source's maxzoom).
    private let layers: [String: [String: [(layer: LabelLayer, sourceMaxZoom: Int)]]]
    /// The largest tile inflated (MapLibre's own limit is far below).
    static let maximumTileBytes = 64 << 20

    public init(subset: GlyphSubset) {
        self.subset = subset
        var layers: [String: [String: [(layer: LabelLayer, sourceMaxZoom: Int)]]] = [:]
        for template in subset.urlTemplates { layers[template] = subset.tileLayers(urlTemplate: template) }
        self.layers = layers
    }

    /// The templates whose tiles some label layer reads (what to page through).
    public var urlTemplates: [String] { layers.keys.sorted() }

    /// Adds what the labels of `tiles` need to `glyphs`; returns how many tiles could not be read.
    public func add(_ tiles: [StoredTileBody], to glyphs: inout LabelGlyphs) -> Int {
        var unreadable = 0
        for tile in tiles {
            guard let bySourceLayer = layers[tile.key.urlTemplate] else { continue }
            let zoom = Int(tile.key.z)
            let laidOut = bySourceLayer.mapValues { $0.filter { $0.layer.isLaidOut(tileZoom: zoom, sourceMaxZoom: $0.sourceMaxZoom) } }
                .filter { !$0.value.isEmpty }
            guard !laidOut.isEmpty else { continue }
            guard let bytes = try? tile.body.decoded(limit: Self.maximumTileBytes),
                  let plain = try? ZlibCodec.gunzippedIfGzip(bytes, limit: Self.maximumTileBytes),
                  let decoded = try? VectorTile(decoding: plain, wanted: { laidOut[$0] != nil }) else {
                unreadable += 1
                continue
            }
            for layer in decoded.layers {
                guard let readers = laidOut[layer.name] else { continue }
                let keys = VectorTileLabelFeature.keys(of: layer)
                for feature in layer.features {
                    let labelFeature = VectorTileLabelFeature(layer: layer, keys: keys, feature: feature)
                    for reader in readers { glyphs.add(labelFeature, layer: reader.layer) }
                }
            }
        }
        return unreadable
    }
}
