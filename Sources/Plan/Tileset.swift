import Foundation
import Geo

/// The parts of a TileJSON document (or of a style source with inline `tiles`) that decide
/// which tiles exist: MapLibre's `Converter<Tileset>`.
public struct Tileset: Hashable, Sendable {
    /// The highest zoom a tile cover is computed for (Geo's limit).
    public static let maxZoom = 30

    /// Only the first template is downloaded, as in MapLibre (the `tiles` table key is the template).
    public let template: TileURLTemplate
    /// `minzoom`…`maxzoom`, default 0…22; fractional zooms truncate as in MapLibre.
    public let zoomRange: ClosedRange<Int>
    /// Tiles wholly outside are not requested (MapLibre requests them and gets 404s or empty tiles).
    public let bounds: LngLatBounds?

    public init(template: TileURLTemplate, zoomRange: ClosedRange<Int> = 0...22, bounds: LngLatBounds? = nil) {
        self.template = template
        self.zoomRange = zoomRange
        self.bounds = bounds
    }

    /// Parses a TileJSON object. `baseURL` resolves relative tile URLs (the TileJSON's own URL,
    /// or the style's for inline tiles); `pointer` locates `object` for error messages.
    init(object: [String: Any], baseURL: String, pointer: String = "") throws(PlanError) {
        guard let tilesValue = object["tiles"] else {
            throw PlanError(.sourceWithoutTiles, "no \"tiles\" (and no \"url\" to a TileJSON)", pointer: pointer)
        }
        let tilesPointer = JSONPointer.appending(pointer, "tiles")
        guard let tiles = tilesValue as? [Any], let first = tiles.first else {
            throw PlanError(.tileJSONInvalid, "\"tiles\" must be a non-empty array of URL templates",
                pointer: tilesPointer)
        }
        guard let firstTemplate = first as? String else {
            throw PlanError(.tileJSONInvalid, "\"tiles\" entries must be strings", pointer: tilesPointer + "/0")
        }
        let scheme: TileURLTemplate.Scheme = object["scheme"] as? String == "tms" ? .tms : .xyz
        let resolved = try ResourceURL.resolve(firstTemplate, against: baseURL, pointer: tilesPointer + "/0")
        do {
            template = try TileURLTemplate(resolved, scheme: scheme)
        } catch {
            throw PlanError(error.code, error.detail, pointer: tilesPointer + "/0")
        }
        let minZoom = try Self.zoom(object["minzoom"], default: 0, pointer: JSONPointer.appending(pointer, "minzoom"))
        let maxZoom = try Self.zoom(object["maxzoom"], default: 22, pointer: JSONPointer.appending(pointer, "maxzoom"))
        guard minZoom <= maxZoom else {
            throw PlanError(.tileJSONInvalid, "minzoom \(minZoom) is above maxzoom \(maxZoom)",
                pointer: JSONPointer.appending(pointer, "minzoom"))
        }
        zoomRange = minZoom...maxZoom
        bounds = try Self.bounds(object["bounds"], pointer: JSONPointer.appending(pointer, "bounds"))
    }

    /// Parses a TileJSON document fetched from `url`.
    public init(tileJSON data: Data, url: String, limits: PlanLimits = .init()) throws(PlanError) {
        guard data.count <= limits.maxDocumentBytes else {
            throw PlanError(.documentTooLarge, "TileJSON larger than \(limits.maxDocumentBytes) bytes", url: url)
        }
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw PlanError(.tileJSONInvalid, "TileJSON is not a JSON object", url: url)
        }
        do {
            try self.init(object: object, baseURL: url)
        } catch {
            throw error.located(in: url)
        }
    }

    private static func zoom(_ value: Any?, default defaultZoom: Int, pointer: String) throws(PlanError) -> Int {
        guard let value else { return defaultZoom }
        guard let number = JSONScalar.double(value), number.isFinite, number >= 0, number <= 255 else {
            throw PlanError(.tileJSONInvalid, "zoom must be a number from 0 to 255", pointer: pointer)
        }
        return min(Int(number), maxZoom)
    }

    /// TileJSON `bounds` `[west, south, east, north]`; latitudes clamped to ±90 and longitudes
    /// to ±180 as MapLibre does.
    private static func bounds(_ value: Any?, pointer: String) throws(PlanError) -> LngLatBounds? {
        guard let value else { return nil }
        guard let array = value as? [Any], array.count == 4,
            case let numbers = array.compactMap(JSONScalar.double), numbers.count == 4,
            numbers.allSatisfy(\.isFinite)
        else {
            throw PlanError(.tileJSONInvalid, "bounds must be four numbers [west, south, east, north]", pointer: pointer)
        }
        let clampLongitude = { (value: Double) in min(max(value, -180), 180) }
        let clampLatitude = { (value: Double) in min(max(value, -90), 90) }
        do {
            return try LngLatBounds(
                west: clampLongitude(numbers[0]), south: clampLatitude(numbers[1]),
                east: clampLongitude(numbers[2]), north: clampLatitude(numbers[3]))
        } catch {
            throw PlanError(.tileJSONInvalid, "invalid bounds: \(error.detail)", pointer: pointer)
        }
    }
}
