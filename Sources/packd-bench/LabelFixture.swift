import ArgumentParser
import Foundation
import Geo
import PackdTestSupport

/// `packd-bench label-fixture DIR`: writes `LabelWorld` (the labelled map of glyph subsetting's
/// tests) as static files for a tile server — `style.json` and `tiles.json` with `{{BASE}}` for
/// the server's base URL, `pois.geojson`, `tiles/z/x/y.pbf` (gzip: serve with `Content-Encoding:
/// gzip`) for the region's cover at every zoom the tiles exist, and `expected.json`: the glyph
/// ranges each font stack needs for `LabelWorld.region`, and those only labels outside it need.
/// `make verify-glyphs` serves it with nginx and the fixture's real glyphs.
struct LabelFixture: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "label-fixture",
        abstract: "Write the labelled test map of glyph subsetting as static files (for make verify-glyphs)."
    )

    @Argument(help: "The folder to write (created; files in it are replaced).") var directory: String

    func run() throws {
        let root = URL(fileURLWithPath: directory)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let world = LabelWorld(base: "{{BASE}}")
        try Data(world.style.utf8).write(to: root.appendingPathComponent("style.json"))
        try Data(world.tileJSON.utf8).write(to: root.appendingPathComponent("tiles.json"))
        try Data(LabelWorld.geoJSON.utf8).write(to: root.appendingPathComponent("pois.geojson"))
        let region = TileRegion.bounds(try LngLatBounds(west: LabelWorld.region[0], south: LabelWorld.region[1],
                                                        east: LabelWorld.region[2], north: LabelWorld.region[3]))
        var written = 0
        for zoom in 0...LabelWorld.maxZoom {
            for tile in TileCover(region: region, zoom: zoom) {
                let bytes = LabelWorld.tile(z: tile.z, x: tile.x, y: tile.y)
                guard !bytes.isEmpty else { continue }
                let folder = root.appendingPathComponent("tiles/\(tile.z)/\(tile.x)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try Data(gzip(bytes)).write(to: folder.appendingPathComponent("\(tile.y).pbf"))
                written += 1
            }
        }
        let expected: [String: Any] = [
            "region": LabelWorld.region, "min_zoom": LabelWorld.minZoom, "max_zoom": LabelWorld.maxZoom,
            "needed": Dictionary(uniqueKeysWithValues: LabelWorld.neededRanges.map { ($0.key.joined(separator: ","), $0.value) }),
            "outside_only": LabelWorld.outsideOnlyRanges,
            "stacks": LabelWorld.stacks.map { $0.joined(separator: ",") },
        ]
        try JSONSerialization.data(withJSONObject: expected, options: [.sortedKeys, .prettyPrinted])
            .write(to: root.appendingPathComponent("expected.json"))
        print("wrote \(written) tiles, style.json, tiles.json, pois.geojson and expected.json to \(root.path)")
    }
}
