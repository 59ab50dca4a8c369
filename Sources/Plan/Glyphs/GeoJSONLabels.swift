import Foundation
import Geo
import Packs

/// A GeoJSON source of a style: its data is a URL (downloaded and stored with the pack) or inline.
public struct GeoJSONLabelSource: Hashable, Sendable {
    public enum Data: Hashable, Sendable {
        case url(String)
        case inline(JSONValue)
    }

    public let id: String
    public let data: Data

    public init(id: String, data: Data) {
        self.id = id
        self.data = data
    }

    public var url: String? {
        if case .url(let url) = data { return url }
        return nil
    }
}

/// Where a GeoJSON feature can be on screen while someone looks at the region offline: MapLibre
/// tiles GeoJSON on the device, so its features show wherever the view is, not only over stored
/// tiles. A view centred anywhere in the region, on a screen up to 2,048 px wide, reaches at
/// most two 512 px tiles beyond the region's cover at the pack's lowest zoom (views at higher
/// zooms reach less far): features within that box count, features beyond it cannot be seen.
public struct LabelArea: Hashable, Sendable {
    /// Tiles of margin around the cover, at `zoom`.
    public static let marginTiles = 2
    /// The box in unit-square coordinates (x east, y south), nil: everywhere.
    let box: (minX: Double, minY: Double, maxX: Double, maxY: Double)?

    public init(region: TileRegion, minZoom: Double) {
        let zoom = max(0, Int(minZoom.rounded(.down)))
        var minX = Int.max, minY = Int.max, maxX = Int.min, maxY = Int.min
        for span in TileCover(region: region, zoom: zoom).spans {
            minX = min(minX, span.xRange.lowerBound)
            maxX = max(maxX, span.xRange.upperBound)
            minY = min(minY, span.y)
            maxY = max(maxY, span.y)
        }
        let tiles = Double(1 << zoom)
        guard minX <= maxX else {
            box = nil
            return
        }
        let margin = Double(Self.marginTiles)
        // A region across the antimeridian covers both edges of the world: its box is the world's width.
        box = ((Double(minX) - margin) / tiles, (Double(minY) - margin) / tiles,
               (Double(maxX) + 1 + margin) / tiles, (Double(maxY) + 1 + margin) / tiles)
    }

    public static func == (lhs: LabelArea, rhs: LabelArea) -> Bool {
        lhs.box.map { [$0.minX, $0.minY, $0.maxX, $0.maxY] } == rhs.box.map { [$0.minX, $0.minY, $0.maxX, $0.maxY] }
    }

    public func hash(into hasher: inout Hasher) {
        if let box { hasher.combine([box.minX, box.minY, box.maxX, box.maxY]) }
    }

    /// Whether a feature whose positions span `west…east`, `south…north` may be seen.
    func contains(west: Double, south: Double, east: Double, north: Double) -> Bool {
        guard let box else { return true }
        let (x0, y1) = WebMercator.project(LngLat(longitude: west, latitude: south))
        let (x1, y0) = WebMercator.project(LngLat(longitude: east, latitude: north))
        let overlapsX = x1 >= box.minX && x0 <= box.maxX
            || x1 + 1 >= box.minX && x0 + 1 <= box.maxX || x1 - 1 >= box.minX && x0 - 1 <= box.maxX
        return overlapsX && y1 >= box.minY && y0 <= box.maxY
    }
}

/// The features of a GeoJSON document (a FeatureCollection, a Feature or a bare geometry) as label
/// features, those outside `area` left out. Bounded: at most `limit` features are read.
enum GeoJSONFeatures {
    static func forEach(in document: JSONValue, area: LabelArea, limit: Int = 1_000_000,
                        _ body: (PropertiesFeature) -> Void) {
        var count = 0
        func visit(_ feature: [String: JSONValue]) {
            guard count < limit else { return }
            count += 1
            let geometry = feature["geometry"]?.objectValue
            guard let geometry, let type = geometry["type"]?.stringValue else { return }
            var bounds: (west: Double, south: Double, east: Double, north: Double)?
            positions(geometry, depth: 0) { longitude, latitude in
                guard let current = bounds else { return bounds = (longitude, latitude, longitude, latitude) }
                bounds = (min(current.west, longitude), min(current.south, latitude),
                          max(current.east, longitude), max(current.north, latitude))
            }
            guard let bounds, area.contains(west: bounds.west, south: bounds.south, east: bounds.east, north: bounds.north)
            else { return }
            let base: String? = switch type {
            case "Point", "MultiPoint": "Point"
            case "LineString", "MultiLineString": "LineString"
            case "Polygon", "MultiPolygon": "Polygon"
            default: nil
            }
            body(PropertiesFeature(properties: feature["properties"]?.objectValue ?? [:], id: feature["id"],
                                   baseGeometryType: base, mayBeMulti: type.hasPrefix("Multi") || base == nil))
        }
        guard let object = document.objectValue else { return }
        switch object["type"]?.stringValue {
        case "FeatureCollection":
            for feature in object["features"]?.arrayValue ?? [] { feature.objectValue.map(visit) }
        case "Feature":
            visit(object)
        default:
            visit(["geometry": document])
        }
    }

    /// Every `[longitude, latitude]` of a geometry (collections included), nesting bounded.
    private static func positions(_ geometry: [String: JSONValue], depth: Int, _ body: (Double, Double) -> Void) {
        guard depth < 8 else { return }
        if let members = geometry["geometries"]?.arrayValue {
            for member in members { member.objectValue.map { positions($0, depth: depth + 1, body) } }
            return
        }
        func walk(_ value: JSONValue, _ level: Int) {
            guard level < 6, let array = value.arrayValue else { return }
            if array.count >= 2, let longitude = array[0].numberValue, let latitude = array[1].numberValue {
                if longitude.isFinite, latitude.isFinite { body(longitude, latitude) }
                return
            }
            for element in array { walk(element, level + 1) }
        }
        geometry["coordinates"].map { walk($0, 0) }
    }
}
