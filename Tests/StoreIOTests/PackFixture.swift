import Foundation
@testable import Store

/// A packd database with two packs sharing tiles, an ambient tile, a vector source (with repeated
/// "ocean" tiles and a no-content tile) and a raster source at pixel ratio 2 — every case an
/// export must include or leave out.
struct PackFixture {
    static let vectorTemplate = "https://tiles.example.org/v/{z}/{x}/{y}.pbf"
    static let rasterTemplate = "https://tiles.example.org/r/{z}/{x}/{y}.png"
    static let layers: [(name: String, fields: [String])] = [("water", ["name", "depth"]), ("roads", ["class", "lanes"])]

    let path: String
    let pack: Int64
    let otherPack: Int64
    /// Vector tile bodies with content of `pack`, by z/x/y.
    let vectorTiles: [String: [UInt8]]
    let rasterTiles: [String: [UInt8]]

    static func key(_ z: Int, _ x: Int, _ y: Int) -> String { "\(z)/\(x)/\(y)" }

    init(_ fixture: StoreIOFixture, name: String = "source.db", maxZoom: Int = 4) throws {
        path = fixture.path(name)
        let database = try fixture.packdDatabase(name)
        let pack = try fixture.addRegion(database, definition: #"{"style_url":"https://example.org/style.json","bounds":[-10,-10,10,10],"min_zoom":0,"max_zoom":4,"pixel_ratio":1}"#, name: "Test pack")
        let otherPack = try fixture.addRegion(database, definition: #"{"style_url":"https://example.org/other.json"}"#, name: "Other")
        try fixture.addResource(database, region: pack, url: "https://example.org/style.json", kind: 1,
                                body: Array(String(repeating: #"{"version":8,"layers":[]}"#, count: 20).utf8), modified: 1_600_000_000)
        try fixture.addResource(database, region: pack, url: "https://example.org/sprite.json", kind: 6,
                                body: Array(#"{"a":{"x":0}}"#.utf8), modified: nil)
        try fixture.addResource(database, region: pack, url: "https://example.org/fonts/0-255.pbf", kind: 4, body: nil, modified: nil)
        try fixture.addResource(database, region: otherPack, url: "https://example.org/other.json", kind: 1,
                                body: Array("{}".utf8), modified: nil)
        let ocean = StoreIOFixture.vectorTile(layers: [("water", ["name"])], salt: 0)
        var vector: [String: [UInt8]] = [:]
        try database.transaction {
            for z in 0...maxZoom {
                for x in 0..<(1 << z) {
                    for y in 0..<(1 << z) {
                        if z == maxZoom && x == 1 && y == 1 {
                            try fixture.addTile(database, region: pack, template: Self.vectorTemplate, z: Int64(z), x: Int64(x), y: Int64(y), body: nil)
                            continue
                        }
                        // The southern half is ocean: the same bytes again and again.
                        let body = y >= (1 << z) / 2 && z > 1 ? ocean
                            : StoreIOFixture.vectorTile(layers: Self.layers, salt: z * 1000 + x * 37 + y)
                        vector[Self.key(z, x, y)] = body
                        try fixture.addTile(database, region: pack, template: Self.vectorTemplate, z: Int64(z), x: Int64(x), y: Int64(y), body: body)
                        if z == 2 && x == 0 {
                            // Shared with the other pack.
                            try database.execute("INSERT INTO region_tiles (region_id, tile_id) SELECT ?1, max(id) FROM tiles",
                                                 [.integer(otherPack)])
                        }
                    }
                }
            }
        }
        var raster: [String: [UInt8]] = [:]
        for (x, y) in [(0, 0), (1, 0), (1, 1)] {
            var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            var state = UInt32(x * 7 + y + 1)
            for _ in 0..<300 { state = state &* 1_664_525 &+ 1_013_904_223; png.append(UInt8(truncatingIfNeeded: state >> 24)) }
            raster[Self.key(1, x, y)] = png
            try fixture.addTile(database, region: pack, template: Self.rasterTemplate, z: 1, x: Int64(x), y: Int64(y), body: png, pixelRatio: 2)
        }
        // Other pack only, and ambient: never in pack's exports.
        try fixture.addTile(database, region: otherPack, template: Self.vectorTemplate, z: 5, x: 0, y: 0, body: ocean)
        try fixture.addTile(database, region: nil, template: Self.vectorTemplate, z: 5, x: 1, y: 0, body: ocean)
        self.pack = pack
        self.otherPack = otherPack
        vectorTiles = vector
        rasterTiles = raster
    }
}

/// Rows of a query as values, for comparing databases.
func rows(_ database: Database, _ sql: String, _ arguments: [DatabaseValue] = []) throws -> [[DatabaseValue]] {
    var result: [[DatabaseValue]] = []
    try database.makeStatement(sql).forEachRow(arguments) { row in
        result.append((0..<row.columnCount).map { row.value(at: $0) })
    }
    return result
}
