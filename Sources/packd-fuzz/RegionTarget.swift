import Foundation
import Geo
import Packs
import Plan

/// A region object as the API receives it and as an imported database stores it. Whatever
/// decodes must survive its own round trips (API form → API, MapLibre form → MapLibre), because
/// packd stores one form and shows the other; a plan of it at low zooms must count and list the
/// same tiles.
enum RegionTarget {
    static func run(_ bytes: [UInt8]) {
        guard let json = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else { return }
        let limits = GeoJSONLimits(maxVertices: 2_000, maxDepth: 8)
        if let region = try? RegionDefinition(json: json, geometryLimits: limits) {
            check(region, limits: limits)
        }
        if let region = try? RegionDefinition(mapLibreJSON: json, geometryLimits: limits) {
            check(region, limits: limits)
        }
    }

    static func check(_ region: RegionDefinition, limits: GeoJSONLimits) {
        let stored = region.mapLibreJSON
        let reparsed = try? JSONSerialization.jsonObject(with: Data(stored.utf8))
        invariant(reparsed != nil, "mapLibreJSON is not JSON: \(stored)")
        let again = try? RegionDefinition(mapLibreJSON: reparsed!, geometryLimits: limits)
        invariant(again == region, "MapLibre form does not round-trip: \(stored)")
        let shown = try? JSONEncoder().encode(region.region)
        invariant(shown != nil, "API form does not encode")
        countTiles(region)
    }

    /// Counts and lists the tiles of a template region at low zooms: the count is computed, the
    /// list enumerated, so they must agree.
    static func countTiles(_ region: RegionDefinition) {
        guard case .tiles = region.content, let maxZoom = region.maxZoom, maxZoom <= 6 else { return }
        let plan = PlanBuilder(region: region).plan
        let expected = plan.expectedTiles
        guard expected <= 20_000 else { return }
        var listed = 0
        for _ in plan { listed += 1 }
        invariant(listed == plan.expectedResources, "listed \(listed) resources, expected \(plan.expectedResources)")
    }
}
