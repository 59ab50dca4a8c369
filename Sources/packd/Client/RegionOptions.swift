import ArgumentParser
import Foundation
import Packs

/// The region flags `create` and `estimate` share, made into Packs' `Region` (the JSON the API
/// reads). Only what is needed to build the JSON is checked here (numbers are numbers, a file
/// can be read); whether the region is valid is the server's to say, with a pointer per problem.
struct RegionOptions: ParsableArguments {
    /// A GeoJSON file read for `--geojson` is at most this large (the server's body limit is
    /// smaller by default, and answers 413 for more).
    static let maximumGeoJSONBytes = 64 << 20

    @Option(help: ArgumentHelp("A MapLibre style to download everything of (style, TileJSONs, tiles, sprites, glyphs).", valueName: "url"))
    var style: String?

    @Option(help: ArgumentHelp("A tile URL template ({z} {x} {y} {s} {quadkey} {bbox-epsg-3857} {prefix} {ratio}); repeat for more.",
                               valueName: "template"))
    var tiles: [String] = []

    @Option(help: ArgumentHelp("A PMTiles archive's http(s) URL: its tiles, read with coalesced range requests.", valueName: "url"))
    var pmtiles: String?

    @Option(help: ArgumentHelp("Comma-separated values of {s} in --tiles.", valueName: "a,b,c"))
    var subdomains: String?

    @Option(help: ArgumentHelp("xyz or tms, for --tiles.", valueName: "scheme"))
    var scheme: String?

    @Option(help: ArgumentHelp("Pixels per tile side, for --tiles (default 256).", valueName: "pixels"))
    var tileSize: Int?

    // `.unconditional`: a western longitude is negative, and must not read as a flag.
    @Option(parsing: .unconditional, help: ArgumentHelp("The bounds west,south,east,north (west > east crosses the antimeridian).",
                                                        valueName: "w,s,e,n"))
    var bbox: String?

    @Option(help: ArgumentHelp("A GeoJSON geometry, Feature or FeatureCollection file, or - for standard input.", valueName: "file"))
    var geojson: String?

    @Option(help: ArgumentHelp("Zooms: 0-12, 14, 10.5-16, or 4- for each source's own maxzoom (default 0-).", valueName: "min-max"))
    var zooms: String?

    @Option(help: ArgumentHelp("Pixel ratio of a style's raster tiles and sprites (default 1).", valueName: "ratio"))
    var pixelRatio: Double?

    @Option(help: ArgumentHelp("all: every glyph range of every font stack (default); region: only those the region's labels need.",
                               valueName: "all|region"))
    var glyphs: String?

    func validate() throws {
        let given = [style != nil, !tiles.isEmpty, pmtiles != nil].filter { $0 }.count
        guard given > 0 else { throw ValidationError("give --style URL, --tiles TEMPLATE or --pmtiles URL") }
        guard given == 1 else { throw ValidationError("give one of --style, --tiles and --pmtiles") }
        guard bbox != nil || geojson != nil else { throw ValidationError("give --bbox W,S,E,N or --geojson FILE") }
        guard bbox == nil || geojson == nil else { throw ValidationError("give either --bbox or --geojson, not both") }
        if let bbox { _ = try Self.bounds(bbox) }
        if let zooms { _ = try Self.zoomRange(zooms) }
    }

    /// The region; `--geojson -` reads standard input.
    func region() throws(ClientFailure) -> Region {
        var region = Region()
        if let style {
            region.styleURL = style
        } else if let pmtiles {
            region.pmtiles = pmtiles
        } else {
            region.tiles = tiles
            region.subdomains = subdomains.map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            region.scheme = scheme
            region.tileSize = tileSize
        }
        do {
            if let bbox { region.bounds = try Self.bounds(bbox) }
            if let zooms { (region.minZoom, region.maxZoom) = try Self.zoomRange(zooms) }
        } catch {
            throw .invalidInput("\(error)")
        }
        if let geojson { region.geometry = try Self.geometry(geojson) }
        region.pixelRatio = pixelRatio
        region.glyphs = glyphs
        return region
    }

    /// `W,S,E,N` as four numbers.
    static func bounds(_ text: String) throws -> [Double] {
        let numbers = text.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard numbers.count == 4, numbers.allSatisfy({ $0?.isFinite == true }) else {
            throw ValidationError("--bbox must be four numbers west,south,east,north, e.g. -10,35,20,60")
        }
        return numbers.compactMap { $0 }
    }

    /// `min-max`, `zoom` (min = max) or `min-` (each source's own maxzoom).
    static func zoomRange(_ text: String) throws -> (Double, Double?) {
        let parts = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let minimum = Double(parts[0]), minimum.isFinite else {
            throw ValidationError("--zooms must be MIN-MAX, ZOOM or MIN-, e.g. 0-12")
        }
        guard parts.count == 2 else { return (minimum, minimum) }
        if parts[1].isEmpty { return (minimum, nil) }
        guard let maximum = Double(parts[1]), maximum.isFinite else {
            throw ValidationError("--zooms must be MIN-MAX, ZOOM or MIN-, e.g. 0-12")
        }
        return (minimum, maximum)
    }

    /// The geometry of a GeoJSON document: a geometry as it is, a Feature's geometry, a
    /// FeatureCollection's geometries as one GeometryCollection.
    static func geometry(_ path: String) throws(ClientFailure) -> JSONValue {
        let data = try read(path)
        let document: JSONValue
        do {
            document = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw .invalidInput("\(path == "-" ? "standard input" : path) is not JSON")
        }
        guard case .object(let object) = document, case .string(let type)? = object["type"] else {
            throw .invalidInput("\(path == "-" ? "standard input" : path) is not a GeoJSON object with a type")
        }
        switch type {
        case "Feature":
            guard let geometry = object["geometry"], geometry != .null else { throw .invalidInput("the GeoJSON Feature has no geometry") }
            return geometry
        case "FeatureCollection":
            guard case .array(let features)? = object["features"] else { throw .invalidInput("the FeatureCollection has no features array") }
            let geometries = features.compactMap { feature -> JSONValue? in
                guard case .object(let members) = feature, let geometry = members["geometry"], geometry != .null else { return nil }
                return geometry
            }
            guard !geometries.isEmpty else { throw .invalidInput("the FeatureCollection has no geometry") }
            return geometries.count == 1 ? geometries[0] : .object(["type": .string("GeometryCollection"), "geometries": .array(geometries)])
        default:
            return document
        }
    }

    /// A file's bytes, or standard input's for `-`, at most `maximumGeoJSONBytes`.
    private static func read(_ path: String) throws(ClientFailure) -> Data {
        let handle = path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path)
        guard let handle else { throw .invalidInput("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { if path != "-" { try? handle.close() } }
        var data = Data()
        do {
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                data.append(chunk)
                guard data.count <= maximumGeoJSONBytes else {
                    throw ClientFailure.invalidInput("\(path == "-" ? "standard input" : path) is larger than \(maximumGeoJSONBytes >> 20) MiB")
                }
            }
        } catch let failure as ClientFailure {
            throw failure
        } catch {
            throw .invalidInput("cannot read \(path): \(error)")
        }
        return data
    }
}
