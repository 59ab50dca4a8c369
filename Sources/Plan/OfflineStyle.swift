import Foundation

/// A stored style read for serving offline: which stored URL each of its sources, sprites and
/// its glyphs lead to, and the style rewritten so that every one of those URLs points at packd
/// (`OfflineLinks`) instead of the upstream.
///
/// Built on `StyleDocument` (the same parsing and URL resolution the download used, so the URLs
/// found here are exactly the keys the download stored), plus the ids that the download does not
/// need but serving does: which source a GeoJSON `data` or image `url` belongs to, and each
/// sprite's id.
public struct OfflineStyle: Sendable {
    /// What a source's offline URLs lead to.
    public enum SourceContent: Hashable, Sendable {
        /// A tile source whose tiles come from the TileJSON stored under `url`.
        case tileJSON(url: String)
        /// A tile source with inline `tiles` in the style.
        case inline(Tileset)
        /// A GeoJSON source's `data` URL or an image source's `url`.
        case data(url: String)
    }

    /// The sprite id a style with a single `sprite` URL uses in offline URLs.
    public static let defaultSpriteID = "default"

    public let url: String
    public let sources: [String: SourceContent]
    /// Sprite id → stored base URL (the one `SpriteFiles` appends `.json`, `@2x.png`… to).
    public let sprites: [String: String]
    public let glyphsTemplate: String?
    private let data: Data

    /// Parses `data`, the style stored for `url`.
    public init(style data: Data, url: String, limits: PlanLimits = .init()) throws(PlanError) {
        let document = try StyleDocument(style: data, url: url, limits: limits)
        // StyleDocument accepted it, so it is a JSON object with valid sources and sprites.
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        var sources: [String: SourceContent] = [:]
        for source in document.tileSources {
            switch source.tiles {
            case .inline(let tileset): sources[source.id] = .inline(tileset)
            case .tileJSON(let url): sources[source.id] = .tileJSON(url: url)
            }
        }
        for (id, value) in object["sources"] as? [String: Any] ?? [:] {
            guard let source = value as? [String: Any] else { continue }
            let pointer = JSONPointer.appending("/sources", id)
            switch source["type"] as? String {
            case "geojson":
                if let reference = source["data"] as? String {
                    sources[id] = .data(url: try ResourceURL.resolve(reference, against: url, pointer: pointer + "/data"))
                }
            case "image":
                if let reference = source["url"] as? String {
                    sources[id] = .data(url: try ResourceURL.resolve(reference, against: url, pointer: pointer + "/url"))
                }
            default:
                continue
            }
        }
        var sprites: [String: String] = [:]
        switch object["sprite"] {
        case let reference as String:
            sprites[Self.defaultSpriteID] = try ResourceURL.resolve(reference, against: url, pointer: "/sprite")
        case let entries as [Any]:
            for (index, entry) in entries.enumerated() {
                guard let entry = entry as? [String: Any], let id = entry["id"] as? String, let reference = entry["url"] as? String
                else { continue }
                sprites[id] = try ResourceURL.resolve(reference, against: url, pointer: JSONPointer.appending("/sprite", index) + "/url")
            }
        default:
            break
        }
        self.url = url
        self.sources = sources
        self.sprites = sprites
        glyphsTemplate = document.glyphsTemplate
        self.data = data
    }

    /// The style with every source, sprite and glyphs URL replaced by `links`. Tile sources get
    /// `scheme: xyz` (packd serves tiles in XYZ numbering whatever the upstream used); a source
    /// with inline tiles gets `maxzoom` no deeper than `maxZooms` says the pack holds (its TileJSON
    /// carries it for the others: `OfflineTileJSON`), so a client zoomed past the pack overzooms
    /// what it has; anything else in the style is kept as it was.
    public func rewritten(_ links: OfflineLinks, maxZooms: [String: Int] = [:]) -> Data {
        guard var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return data }
        if var styleSources = object["sources"] as? [String: Any] {
            for (id, content) in sources {
                guard var source = styleSources[id] as? [String: Any] else { continue }
                switch content {
                case .tileJSON:
                    source["url"] = links.tileJSON(source: id)
                case .inline:
                    source["tiles"] = [links.tiles(source: id)]
                    source["scheme"] = "xyz"
                    if let cap = maxZooms[id] { source["maxzoom"] = OfflineTileJSON.capped(source["maxzoom"], at: cap) }
                case .data:
                    source[source["type"] as? String == "image" ? "url" : "data"] = links.data(source: id)
                }
                styleSources[id] = source
            }
            object["sources"] = styleSources
        }
        switch object["sprite"] {
        case is String:
            object["sprite"] = links.sprite(id: Self.defaultSpriteID)
        case let entries as [Any]:
            object["sprite"] = entries.map { value -> Any in
                guard var entry = value as? [String: Any], let id = entry["id"] as? String else { return value }
                entry["url"] = links.sprite(id: id)
                return entry
            }
        default:
            break
        }
        if glyphsTemplate != nil { object["glyphs"] = links.glyphs() }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? data
    }

    /// The stored URL of sprite file `file` (`sprite.json`, `sprite.png`, `sprite@2x.json`,
    /// `sprite@2x.png`) of sprite `id`, as the download stored it; nil for another file name.
    public func spriteURL(id: String, file: String) -> String? {
        guard let base = sprites[id], file.hasPrefix("sprite") else { return nil }
        let suffix = String(file.dropFirst("sprite".count))
        guard [".json", ".png", "@2x.json", "@2x.png"].contains(suffix) else { return nil }
        let split = base.firstIndex { $0 == "?" || $0 == "#" } ?? base.endIndex
        return base[..<split] + suffix + base[split...]
    }

    /// The stored URL of the glyph range starting at `rangeStart` for `fontStack` (the
    /// comma-separated stack as MapLibre requests it, decoded).
    public func glyphsURL(fontStack: String, rangeStart: Int) -> String? {
        guard let glyphsTemplate else { return nil }
        return GlyphRanges.url(template: glyphsTemplate, fontStack: [fontStack], rangeStart: rangeStart)
    }
}

/// A stored TileJSON (or a source with inline tiles) rewritten for serving: `tiles` pointing at
/// packd's tile URL, `scheme: xyz`, `maxzoom` no deeper than the pack holds, everything else as
/// stored.
public enum OfflineTileJSON {
    /// `stored` rewritten; a synthesised TileJSON 3.0 from `tileset` when nothing is stored
    /// (inline sources, tiles regions) or the stored bytes are not a JSON object. `maxZoom`: the
    /// deepest zoom the pack holds of the source (nil: no cap).
    public static func rewritten(_ stored: Data?, tileset: Tileset, tilesURL: String, maxZoom: Int? = nil) -> Data {
        var object = stored.flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] } ?? [
            "tilejson": "3.0.0", "minzoom": tileset.zoomRange.lowerBound, "maxzoom": tileset.zoomRange.upperBound,
        ]
        if stored == nil, let bounds = tileset.bounds {
            object["bounds"] = [bounds.west, bounds.south, bounds.east, bounds.north]
        }
        object["tiles"] = [tilesURL]
        object["scheme"] = "xyz"
        if let maxZoom { object["maxzoom"] = capped(object["maxzoom"], at: maxZoom) }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }

    /// A source's `maxzoom` (absent: MapLibre's 22) no deeper than `cap`.
    static func capped(_ maxZoom: Any?, at cap: Int) -> Int {
        guard let number = maxZoom as? NSNumber, !(maxZoom is Bool) else { return min(cap, Tileset.maxZoom) }
        return min(cap, Int(number.doubleValue.rounded(.down)))
    }
}
