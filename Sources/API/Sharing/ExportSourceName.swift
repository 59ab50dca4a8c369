import Foundation
import Packs
import Plan

/// Resolves `?source=NAME` of an archive export to one of the pack's stored tilesets. NAME is
/// either a tile URL template exactly as stored, or the name of a source in the pack's stored
/// style (`"ne"` for `"sources": {"ne": …}`), whose tile templates come from the style itself
/// (`tiles`) or from its stored TileJSON (`url`). Runs on a pool thread with a reader.
enum ExportSourceName {
    /// The URL template to hand to `PackTileSource.choose`: NAME itself when it is no style
    /// source name (the store then reports an unknown template).
    static func urlTemplate(for name: String, pack: Int64, sources: [PackTileSource], reader: any StoreReading & PackExporting) throws -> String {
        if sources.contains(where: { $0.urlTemplate == name }) { return name }
        guard let record = try reader.pack(pack),
              let styleURL = (try? RegionDefinition(stored: record.definition))?.styleURL,
              let style = try json(reader, .resource(url: styleURL, kind: .style)),
              let styleSources = style["sources"] as? [String: Any],
              let source = styleSources[name] as? [String: Any] else {
            return name
        }
        var templates = source["tiles"] as? [String] ?? []
        if templates.isEmpty, let url = source["url"] as? String, let tileJSON = try json(reader, .resource(url: url, kind: .source)) {
            templates = tileJSON["tiles"] as? [String] ?? []
        }
        return sources.first { templates.contains($0.urlTemplate) }?.urlTemplate ?? name
    }

    /// A stored JSON object (style or TileJSON), inflated with the store's limit.
    private static func json(_ reader: any StoreReading & PackExporting, _ key: ResourceKey) throws -> [String: Any]? {
        guard let body = try reader.resource(key, linkedTo: nil)?.body else { return nil }
        let bytes = try body.data.withUnsafeBytes { raw in
            body.compressed ? try ZlibCodec.inflate(raw).output : Array(raw)
        }
        return try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    }
}
