import Geo

/// Validates a region object field by field, collecting every problem with its pointer.
struct RegionDecoder {
    enum Format {
        /// The API: `bounds` `[west, south, east, north]`, unknown fields rejected.
        case api
        /// MapLibre's stored definition: `bounds` `[south, west, north, east]`, other fields ignored,
        /// a style URL of any scheme kept as stored.
        case mapLibre
    }

    static let apiFields: Set<String> = [
        "style_url", "tiles", "subdomains", "scheme", "tile_size", "bounds", "geometry", "min_zoom", "max_zoom",
        "pixel_ratio", "include_ideographs", "glyphs", "pmtiles",
    ]
    static let maxTemplates = 16
    static let maxSubdomains = 64

    let format: Format
    let geometryLimits: GeoJSONLimits
    private var problems: [RegionError.Problem] = []

    private init(format: Format, geometryLimits: GeoJSONLimits) {
        self.format = format
        self.geometryLimits = geometryLimits
    }

    static func decode(_ json: Any, format: Format, geometryLimits: GeoJSONLimits) throws(RegionError)
        -> RegionDefinition
    {
        var decoder = RegionDecoder(format: format, geometryLimits: geometryLimits)
        return try decoder.decode(json)
    }

    private mutating func decode(_ json: Any) throws(RegionError) -> RegionDefinition {
        guard let object = json as? [String: Any] else {
            throw RegionError([.init(pointer: "", detail: "region must be a JSON object")])
        }
        if format == .api {
            for key in object.keys.sorted() where !Self.apiFields.contains(key) {
                report(JSONPointer.appending("", key), "unknown field")
            }
        }
        let content = content(object)
        let area = area(object)
        let zooms = zooms(object, requireMax: content.map { if case .tiles = $0 { true } else { false } } ?? false)
        let styleRegion = content.map { if case .style = $0 { true } else { false } } ?? false
        let pixelRatio = pixelRatio(object)
        var includeIdeographs = true
        if let value = object["include_ideographs"] {
            if format == .api, !styleRegion, content != nil {
                report("/include_ideographs", "only a style region downloads glyphs; a tiles region has none")
            } else if let bool = JSONScalar.bool(value) {
                includeIdeographs = bool
            } else {
                report("/include_ideographs", "must be true or false")
            }
        }
        var glyphs = RegionDefinition.Glyphs.all
        if let value = object["glyphs"] {
            if format == .api, case .tiles? = content {
                report("/glyphs", "only a style region downloads glyphs; a tiles region has none")
            } else if let name = value as? String, let choice = RegionDefinition.Glyphs(rawValue: name) {
                glyphs = choice
            } else if format == .api {
                report("/glyphs", "must be \"all\" (every range of every font stack) or \"region\" (the ranges the region's labels need)")
            }
        }
        guard problems.isEmpty, let content, let area, let zooms, let pixelRatio else {
            throw RegionError(problems)
        }
        return RegionDefinition(
            content: content, area: area, minZoom: zooms.min, maxZoom: zooms.max, pixelRatio: pixelRatio,
            includeIdeographs: includeIdeographs, glyphs: glyphs)
    }

    private mutating func report(_ pointer: String, _ detail: String) {
        problems.append(.init(pointer: pointer, detail: detail))
    }

    private mutating func content(_ object: [String: Any]) -> RegionDefinition.Content? {
        if let archive = object["pmtiles"] {
            for key in ["style_url", "tiles", "subdomains", "scheme", "tile_size"] where object[key] != nil {
                report(JSONPointer.appending("", key), key == "style_url" || key == "tiles"
                       ? "give one of \"style_url\", \"tiles\" or \"pmtiles\"" : "only allowed with \"tiles\"")
            }
            return archiveSource(archive)
        }
        switch (object["style_url"], object["tiles"]) {
        case (nil, nil):
            report("", "region needs \"style_url\", \"tiles\" or \"pmtiles\"")
            return nil
        case (.some, .some):
            report("/tiles", "give either \"style_url\" or \"tiles\", not both")
            return nil
        case (let styleURL?, nil):
            for key in ["subdomains", "scheme", "tile_size"] where object[key] != nil {
                report(JSONPointer.appending("", key), "only allowed with \"tiles\"")
            }
            guard let url = styleURL as? String else {
                report("/style_url", "must be a string")
                return nil
            }
            do {
                // MapLibre stores any style URL (`mapbox://styles/…`, `asset://…`); an imported
                // region keeps it exactly. The API downloads http(s) styles only.
                if format == .mapLibre && !ResourceURL.isHTTP(url) {
                    try ResourceURL.checkStoredURL(url, pointer: "/style_url")
                } else {
                    try ResourceURL.checkHTTP(url, pointer: "/style_url")
                    if format == .api { try ResourceURL.checkClientURL(url, pointer: "/style_url", template: false) }
                }
            } catch {
                report("/style_url", error.detail)
                return nil
            }
            return .style(url: url)
        case (nil, let tiles?):
            return templateSource(tiles, object).map { .tiles($0) }
        }
    }

    private mutating func archiveSource(_ value: Any) -> RegionDefinition.Content? {
        guard let url = value as? String else {
            report("/pmtiles", "must be the archive's http(s) URL")
            return nil
        }
        do {
            try PMTilesSourceURL.checkArchive(url, pointer: "/pmtiles")
        } catch {
            report("/pmtiles", error.detail)
            return nil
        }
        return .archive(url: url)
    }

    private mutating func templateSource(_ tiles: Any, _ object: [String: Any]) -> RegionDefinition.TemplateSource? {
        guard let templates = tiles as? [String], !templates.isEmpty, templates.count <= Self.maxTemplates else {
            report("/tiles", "must be an array of 1 to \(Self.maxTemplates) URL template strings")
            return nil
        }
        var subdomains: [String] = []
        if let value = object["subdomains"] {
            if let strings = value as? [String], strings.count <= Self.maxSubdomains,
                strings.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 253 })
            {
                subdomains = strings
            } else {
                report("/subdomains", "must be an array of at most \(Self.maxSubdomains) non-empty host labels")
            }
        }
        var scheme = TileURLTemplate.Scheme.xyz
        if let value = object["scheme"] {
            if let name = value as? String, let parsed = TileURLTemplate.Scheme(rawValue: name) {
                scheme = parsed
            } else {
                report("/scheme", "must be \"xyz\" or \"tms\"")
            }
        }
        var tileSize = 256
        if let value = object["tile_size"] {
            if let size = JSONScalar.double(value), size == size.rounded(), size >= 1, size <= 8_192 {
                tileSize = Int(size)
            } else {
                report("/tile_size", "must be a whole number of pixels from 1 to 8192")
            }
        }
        var parsed: [TileURLTemplate] = []
        for (index, template) in templates.enumerated() {
            let pointer = JSONPointer.appending("/tiles", index)
            do {
                try ResourceURL.checkHTTP(template, pointer: pointer)
                if format == .api { try ResourceURL.checkClientURL(template, pointer: pointer, template: true) }
                parsed.append(try TileURLTemplate(template, scheme: scheme, subdomains: subdomains))
            } catch {
                report(pointer, error.detail)
            }
        }
        guard let first = parsed.first, parsed.count == templates.count else { return nil }
        return .init(templates: templates, subdomains: subdomains, scheme: scheme, tileSize: tileSize, template: first)
    }

    private mutating func area(_ object: [String: Any]) -> TileRegion? {
        switch (object["bounds"], object["geometry"]) {
        case (nil, nil):
            report("", "region needs \"bounds\" or \"geometry\"")
            return nil
        case (.some, .some):
            report("/geometry", "give either \"bounds\" or \"geometry\", not both")
            return nil
        case (let bounds?, nil):
            return self.bounds(bounds).map { .bounds($0) }
        case (nil, let geometry?):
            do {
                return .geometry(try Geometry(geoJSON: geometry, pointer: "/geometry", limits: geometryLimits))
            } catch {
                let pointer = error.pointer.hasPrefix("/geometry") ? error.pointer : "/geometry" + error.pointer
                report(pointer, error.detail)
                return nil
            }
        }
    }

    private mutating func bounds(_ value: Any) -> LngLatBounds? {
        let order = format == .api ? "[west, south, east, north]" : "[south, west, north, east]"
        guard let array = value as? [Any], array.count == 4, case let numbers = array.compactMap(JSONScalar.double),
            numbers.count == 4
        else {
            report("/bounds", "must be four numbers \(order)")
            return nil
        }
        let (west, south, east, north) =
            format == .api ? (numbers[0], numbers[1], numbers[2], numbers[3]) : (numbers[1], numbers[0], numbers[3], numbers[2])
        do {
            return try LngLatBounds(west: west, south: south, east: east, north: north)
        } catch {
            report("/bounds" + error.pointer, error.detail)
            return nil
        }
    }

    private mutating func zooms(_ object: [String: Any], requireMax: Bool) -> (min: Double, max: Double?)? {
        let minZoom: Double? = object["min_zoom"] == nil ? 0 : zoom(object["min_zoom"], "/min_zoom")
        let maxZoom = zoom(object["max_zoom"], "/max_zoom")
        let maxZoomGiven = object["max_zoom"] != nil
        if !maxZoomGiven && requireMax {
            report("/max_zoom", "a tiles region has no source maxzoom to fall back on: give max_zoom")
        }
        guard let minZoom, maxZoomGiven ? maxZoom != nil : !requireMax else { return nil }
        if let maxZoom, minZoom > maxZoom {
            report("/min_zoom", "min_zoom \(minZoom) is above max_zoom \(maxZoom)")
            return nil
        }
        return (minZoom, maxZoom)
    }

    private mutating func zoom(_ value: Any?, _ pointer: String) -> Double? {
        guard let value else { return nil }
        guard let zoom = JSONScalar.double(value), zoom >= 0, zoom <= RegionDefinition.maxZoomLimit else {
            report(pointer, "must be a number from 0 to \(Int(RegionDefinition.maxZoomLimit))")
            return nil
        }
        return zoom
    }

    private mutating func pixelRatio(_ object: [String: Any]) -> Double? {
        guard let value = object["pixel_ratio"] else { return 1 }
        guard let ratio = JSONScalar.double(value), ratio > 0, ratio <= 8 else {
            report("/pixel_ratio", "must be a number above 0 and at most 8")
            return nil
        }
        return ratio
    }
}
