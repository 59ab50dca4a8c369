import Foundation
import TileFormats

/// The TileJSON packd derives from a PMTiles archive, as MapLibre's PMTiles sources derive it
/// (pmtiles' `getTileJson`, MapLibre Native's `PMTilesFileSource`): zooms, bounds and center from
/// the header, the descriptive fields and `vector_layers` from the JSON metadata, and `tiles`
/// pointing at the archive's stable template. Deterministic (sorted keys), so an unchanged archive
/// gives the same bytes.
public enum PMTilesTileJSON {
    /// Metadata fields copied when they are strings of at most `maxStringBytes`.
    static let textFields = ["name", "description", "attribution", "version", "type", "format"]
    static let maxStringBytes = 16 << 10
    /// `vector_layers` with more entries than this is left out (a broken or hostile archive).
    static let maxVectorLayers = 4_096

    /// The TileJSON document of the archive whose key is `key`.
    public static func document(header: PMTilesHeader, metadata: [String: Any], key: String) -> [UInt8] {
        var object: [String: Any] = [
            "tilejson": "3.0.0",
            "tiles": [PMTilesSourceURL.tileTemplate(forKey: key)],
            "scheme": "xyz",
            "minzoom": Int(header.minZoom),
            "maxzoom": Int(header.maxZoom),
        ]
        let bounds = header.bounds
        // All-zero bounds are a writer that did not fill them in, not a point at 0,0.
        if header.minLonE7 != header.maxLonE7 || header.minLatE7 != header.maxLatE7 {
            object["bounds"] = [bounds.west, bounds.south, bounds.east, bounds.north]
        }
        let center = header.center
        object["center"] = [center.longitude, center.latitude, center.zoom] as [Any]
        for field in textFields {
            if let text = metadata[field] as? String, text.utf8.count <= maxStringBytes { object[field] = text }
        }
        if let layers = metadata["vector_layers"] as? [Any], layers.count <= maxVectorLayers,
           layers.allSatisfy({ ($0 as? [String: Any])?["id"] is String }) {
            object["vector_layers"] = layers
        }
        if header.tileType == .mlt { object["encoding"] = "mlt" }
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }
}
