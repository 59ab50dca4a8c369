import Foundation
import Geo
import Plan

/// A style document, then a TileJSON for the first source that needs one, through `PlanBuilder`
/// as a download does. The input is split at the first NUL byte: style before, TileJSON after.
enum StyleTarget {
    static let styleURL = "https://maps.example/styles/basic/style.json"
    static let limits = PlanLimits()

    static func run(_ bytes: [UInt8]) {
        let split = bytes.firstIndex(of: 0) ?? bytes.endIndex
        let style = Data(bytes[..<split])
        let tileJSON = split < bytes.endIndex ? Data(bytes[(split + 1)...]) : Data()
        let area = TileRegion.bounds(try! LngLatBounds(west: 5.9, south: 45.8, east: 10.5, north: 47.8))
        let region = RegionDefinition(content: .style(url: styleURL), area: area, minZoom: 0, maxZoom: 3)
        var builder = PlanBuilder(region: region, limits: limits)
        guard (try? builder.addStyle(style)) != nil else { return }
        _ = builder.plan.expectedResources
        if let url = builder.missingTileJSONURLs.first {
            guard (try? builder.addTileJSON(tileJSON, url: url)) != nil else { return }
            invariant(!builder.missingTileJSONURLs.contains(url), "an added TileJSON is still missing")
        }
        // Also any TileJSON on its own, against its URL.
        _ = try? Tileset(tileJSON: tileJSON, url: "https://maps.example/tiles.json", limits: limits)
        let plan = builder.plan
        guard plan.expectedTiles <= 20_000 else { return }
        var listed = 0
        for resource in plan {
            invariant(!resource.url.isEmpty, "a planned resource has no URL")
            listed += 1
        }
        invariant(listed == plan.expectedResources, "listed \(listed) resources, expected \(plan.expectedResources)")
    }
}
