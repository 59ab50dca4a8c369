import Foundation

/// What a MapLibre style (v8) makes a client download, with every URL resolved against the
/// style's own URL: tile sources (inline tiles or a TileJSON URL), GeoJSON `data` URLs,
/// image-source URLs, sprites and glyphs.
public struct StyleDocument: Hashable, Sendable {
    /// One source MapLibre would fetch tiles for.
    public struct TileSource: Hashable, Sendable {
        public enum Kind: String, Hashable, Sendable {
            case vector, raster, rasterDEM = "raster-dem"
        }

        public enum Tiles: Hashable, Sendable {
            case inline(Tileset)
            case tileJSON(url: String)
        }

        public let id: String
        public let kind: Kind
        /// MapLibre downloads vector tiles as 512 px whatever the style says; raster and
        /// raster-dem use the source's `tileSize` (default 512).
        public let tileSize: Int
        public let tiles: Tiles
    }

    /// Source ids sorted, so plans are stable whatever order the JSON object had.
    public let tileSources: [TileSource]
    /// URLs of GeoJSON `data` (MapLibre stores them as kind 2, source).
    public let geoJSONURLs: [String]
    /// URLs of image sources (kind 7).
    public let imageURLs: [String]
    /// Sprite base URLs (one, or every entry of a multi-sprite array).
    public let spriteURLs: [String]
    /// The `glyphs` template, if the style has one.
    public let glyphsTemplate: String?
    /// Every font stack the symbol layers can use, sorted.
    public let fontStacks: [[String]]
    /// The symbol layers that can draw text, in style order (glyph subsetting reads them).
    public let labelLayers: [LabelLayer]
    /// GeoJSON sources by id: where their data is (a URL, stored with the pack) or the data itself.
    public let geoJSONSources: [GeoJSONLabelSource]

    /// Parses `data`, the style fetched from `url`.
    public init(style data: Data, url: String, limits: PlanLimits = .init()) throws(PlanError) {
        guard data.count <= limits.maxDocumentBytes else {
            throw PlanError(.documentTooLarge, "style larger than \(limits.maxDocumentBytes) bytes", url: url)
        }
        guard let json = try? JSONSerialization.jsonObject(with: data) else {
            throw PlanError(.styleNotJSON, "style is not valid JSON", url: url)
        }
        do {
            try self.init(object: json, url: url, limits: limits)
        } catch {
            throw error.located(in: url)
        }
    }

    init(object json: Any, url: String, limits: PlanLimits) throws(PlanError) {
        guard let style = json as? [String: Any] else {
            throw PlanError(.styleNotJSON, "style is not a JSON object")
        }
        guard let version = style["version"].flatMap(JSONScalar.double), version == 8 else {
            throw PlanError(.styleVersion, "only style version 8 is supported", pointer: "/version")
        }
        let sources = try Self.sources(style["sources"], styleURL: url, limits: limits)
        tileSources = sources.tiles
        geoJSONURLs = sources.geoJSON.compactMap(\.url)
        geoJSONSources = sources.geoJSON
        imageURLs = sources.images
        spriteURLs = try Self.sprites(style["sprite"], styleURL: url, limits: limits)
        if let glyphs = style["glyphs"] {
            guard let template = glyphs as? String else {
                throw PlanError(.styleInvalid, "glyphs must be a URL template string", pointer: "/glyphs")
            }
            glyphsTemplate = try ResourceURL.resolve(template, against: url, pointer: "/glyphs")
        } else {
            glyphsTemplate = nil
        }
        fontStacks = try Self.fontStacks(style["layers"], limits: limits)
        labelLayers = ((style["layers"] as? [Any]) ?? []).compactMap { layer in
            guard let layer = layer as? [String: Any], layer["type"] as? String == "symbol",
                  case .object(let object)? = StyleJSON.value(layer, depth: limits.maxExpressionDepth) else { return nil }
            return LabelLayer(object)
        }
    }

    private static func sources(_ value: Any?, styleURL: String, limits: PlanLimits) throws(PlanError)
        -> (tiles: [TileSource], geoJSON: [GeoJSONLabelSource], images: [String])
    {
        guard let value else { return ([], [], []) }
        guard let sources = value as? [String: Any] else {
            throw PlanError(.styleInvalid, "sources must be an object", pointer: "/sources")
        }
        guard sources.count <= limits.maxSources else {
            throw PlanError(.documentTooLarge, "more than \(limits.maxSources) sources", pointer: "/sources")
        }
        var tiles: [TileSource] = []
        var geoJSON: [GeoJSONLabelSource] = []
        var images: [String] = []
        for id in sources.keys.sorted() {
            let pointer = JSONPointer.appending("/sources", id)
            guard let source = sources[id] as? [String: Any] else {
                throw PlanError(.styleInvalid, "source must be an object", pointer: pointer)
            }
            let type = source["type"] as? String
            switch type {
            case "vector", "raster", "raster-dem":
                let kind = TileSource.Kind(rawValue: type ?? "") ?? .vector
                tiles.append(try tileSource(id: id, kind: kind, source, styleURL: styleURL, pointer: pointer))
            case "geojson":
                // Inline object data needs nothing downloaded.
                if let data = source["data"] as? String {
                    geoJSON.append(GeoJSONLabelSource(id: id, data: .url(try ResourceURL.resolve(data, against: styleURL,
                        pointer: JSONPointer.appending(pointer, "data")))))
                } else if let data = source["data"], let inline = StyleJSON.value(data) {
                    geoJSON.append(GeoJSONLabelSource(id: id, data: .inline(inline)))
                }
            case "image":
                guard let imageURL = source["url"] as? String else {
                    throw PlanError(.styleInvalid, "image source needs a url", pointer: pointer)
                }
                images.append(try ResourceURL.resolve(imageURL, against: styleURL,
                    pointer: JSONPointer.appending(pointer, "url")))
            default:
                continue  // video cannot be stored offline; unknown types are not ours to judge
            }
        }
        return (tiles, geoJSON, images)
    }

    private static func tileSource(
        id: String, kind: TileSource.Kind, _ source: [String: Any], styleURL: String, pointer: String
    ) throws(PlanError) -> TileSource {
        var tileSize = 512
        if kind != .vector, let value = source["tileSize"] {
            guard let size = JSONScalar.double(value), size >= 1, size <= 65_535 else {
                throw PlanError(.styleInvalid, "tileSize must be a number from 1 to 65535",
                    pointer: JSONPointer.appending(pointer, "tileSize"))
            }
            tileSize = Int(size)
        }
        if let url = source["url"] {
            guard let url = url as? String else {
                throw PlanError(.styleInvalid, "source url must be a string", pointer: JSONPointer.appending(pointer, "url"))
            }
            let urlPointer = JSONPointer.appending(pointer, "url")
            // A PMTiles archive (`pmtiles://…`): its TileJSON is derived from the archive, stored under its key.
            if let key = try PMTilesSourceURL.key(forSourceURL: url, styleURL: styleURL, pointer: urlPointer) {
                return TileSource(id: id, kind: kind, tileSize: tileSize, tiles: .tileJSON(url: key))
            }
            let resolved = try ResourceURL.resolve(url, against: styleURL, pointer: urlPointer)
            return TileSource(id: id, kind: kind, tileSize: tileSize, tiles: .tileJSON(url: resolved))
        }
        let tileset = try Tileset(object: source, baseURL: styleURL, pointer: pointer)
        return TileSource(id: id, kind: kind, tileSize: tileSize, tiles: .inline(tileset))
    }

    private static func sprites(_ value: Any?, styleURL: String, limits: PlanLimits) throws(PlanError) -> [String] {
        switch value {
        case nil:
            return []
        case let url as String:
            return [try ResourceURL.resolve(url, against: styleURL, pointer: "/sprite")]
        case let entries as [Any]:
            guard entries.count <= limits.maxSprites else {
                throw PlanError(.documentTooLarge, "more than \(limits.maxSprites) sprites", pointer: "/sprite")
            }
            var urls: [String] = []
            for (index, entry) in entries.enumerated() {
                let pointer = JSONPointer.appending("/sprite", index)
                guard let entry = entry as? [String: Any], entry["id"] is String, let url = entry["url"] as? String
                else {
                    throw PlanError(.styleInvalid, "sprite entries must be {\"id\": string, \"url\": string}",
                        pointer: pointer)
                }
                let resolved = try ResourceURL.resolve(url, against: styleURL, pointer: JSONPointer.appending(pointer, "url"))
                if !urls.contains(resolved) { urls.append(resolved) }
            }
            return urls
        default:
            throw PlanError(.styleInvalid, "sprite must be a URL or an array of {id, url}", pointer: "/sprite")
        }
    }

    private static func fontStacks(_ value: Any?, limits: PlanLimits) throws(PlanError) -> [[String]] {
        guard let value else { return [] }
        guard let layers = value as? [Any] else {
            throw PlanError(.styleInvalid, "layers must be an array", pointer: "/layers")
        }
        guard layers.count <= limits.maxLayers else {
            throw PlanError(.documentTooLarge, "more than \(limits.maxLayers) layers", pointer: "/layers")
        }
        var collector = FontStackCollector(limits: limits)
        for (index, layer) in layers.enumerated() {
            if let layer = layer as? [String: Any] {
                try collector.add(layer: layer, pointer: JSONPointer.appending("/layers", index))
            }
        }
        return collector.stacks.sorted { $0.lexicographicallyPrecedes($1) }
    }
}
