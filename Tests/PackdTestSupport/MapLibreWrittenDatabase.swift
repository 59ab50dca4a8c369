import CZlib
import Foundation
import Store

/// An offline database written the way MapLibre Native's `OfflineDatabase` writes one: its
/// `offline_schema.sql` (schema 6) after `createSchema`'s pragmas, the region row from
/// `createRegion` (the definition as `encodeOfflineRegionDefinition` prints it: rapidjson, doubles
/// as `0.0`, bounds `[south, west, north, east]`), rows from `putResource`/`putTile` (`data`
/// zlib-compressed only when that is smaller) linked by `markUsed`, and the ambient rows
/// `putResourceWithUrl`/`preloadData` leave — kind 0, `Unknown`, linked to no region.
///
/// URLs are what a phone stores for a `mapbox://` style: the style, source, sprite and glyph
/// URLs as the style names them, and tiles under the canonical `mapbox://tiles/…` template.
public enum MapLibreWrittenDatabase {
    /// MapLibre's offline_schema.sql (schema 6), typed out independently of `OfflineSchema.ddl`
    /// so an edit there cannot silently change what is compared against.
    public static let schema6 = """
        CREATE TABLE resources (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, kind INTEGER NOT NULL,
          expires INTEGER, modified INTEGER, etag TEXT, data BLOB, compressed INTEGER NOT NULL DEFAULT 0,
          accessed INTEGER NOT NULL, must_revalidate INTEGER NOT NULL DEFAULT 0, UNIQUE (url));
        CREATE TABLE tiles (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, url_template TEXT NOT NULL,
          pixel_ratio INTEGER NOT NULL, z INTEGER NOT NULL, x INTEGER NOT NULL, y INTEGER NOT NULL, expires INTEGER,
          modified INTEGER, etag TEXT, data BLOB, compressed INTEGER NOT NULL DEFAULT 0, accessed INTEGER NOT NULL,
          must_revalidate INTEGER NOT NULL DEFAULT 0, UNIQUE (url_template, pixel_ratio, z, x, y));
        CREATE TABLE regions (id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, definition TEXT NOT NULL, description BLOB);
        CREATE TABLE region_resources (region_id INTEGER NOT NULL REFERENCES regions(id) ON DELETE CASCADE,
          resource_id INTEGER NOT NULL REFERENCES resources(id), UNIQUE (region_id, resource_id));
        CREATE TABLE region_tiles (region_id INTEGER NOT NULL REFERENCES regions(id) ON DELETE CASCADE,
          tile_id INTEGER NOT NULL REFERENCES tiles(id), UNIQUE (region_id, tile_id));
        CREATE INDEX resources_accessed ON resources (accessed);
        CREATE INDEX tiles_accessed ON tiles (accessed);
        CREATE INDEX region_resources_resource_id ON region_resources (resource_id);
        CREATE INDEX region_tiles_tile_id ON region_tiles (tile_id);
        PRAGMA user_version = 6;
        """

    public static let sourceURL = "mapbox://mapbox.mapbox-streets-v8"
    public static let tileTemplate = "mapbox://tiles/mapbox.mapbox-streets-v8/{z}/{x}/{y}.vector.pbf"
    public static let spriteURL = "mapbox://sprites/mapbox/streets-v11"
    public static let glyphsTemplate = "mapbox://fonts/mapbox/{fontstack}/{range}.pbf"
    /// The ambient row `putResourceWithUrl` left: kind 0, in no region.
    public static let ambientURL = "https://api.example/preloaded/terms.json"

    /// The definition `encodeOfflineRegionDefinition` writes for a bounds region at z0–1.
    public static func definition(styleURL: String) -> String {
        #"{"style_url":"\#(styleURL)","min_zoom":0.0,"max_zoom":1.0,"pixel_ratio":1.0,"include_ideographs":false,"bounds":[-10.0,-20.0,10.0,20.0]}"#
    }

    public static func style(sourceURL: String = sourceURL) -> [UInt8] {
        Array(#"""
        {"version":8,"name":"Streets","sources":{"composite":{"type":"vector","url":"\#(sourceURL)"}},
         "sprite":"\#(spriteURL)","glyphs":"\#(glyphsTemplate)",
         "layers":[{"id":"water","type":"fill","source":"composite","source-layer":"water"},
                   {"id":"labels","type":"symbol","source":"composite","source-layer":"place_label",
                    "layout":{"text-field":"{name}","text-font":["Open Sans Regular"]}}]}
        """#.utf8)
    }

    public static let tileJSON = Array(#"{"tilejson":"2.2.0","tiles":["\#(tileTemplate)"],"minzoom":0,"maxzoom":16}"#.utf8)

    /// The tiles of the region (z0–1 over the bounds) and each tile's bytes as served.
    public static let tiles: [(z: Int64, x: Int64, y: Int64, body: [UInt8])] = [
        (0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 0, 1), (1, 1, 1),
    ].map { z, x, y in (z, x, y, Array(repeating: UInt8(truncatingIfNeeded: 10 * z + 3 * x + y + 1), count: 300)) }

    /// Every region resource: url, MapLibre `Resource::Kind`, body.
    public static func resources(styleURL: String) -> [(url: String, kind: Int64, body: [UInt8])] {
        [(styleURL, 1, style()), (sourceURL, 2, tileJSON),
         (glyphsTemplate.replacingOccurrences(of: "{fontstack}", with: "Open%20Sans%20Regular")
            .replacingOccurrences(of: "{range}", with: "0-255"), 4, Array(repeating: 7, count: 64)),
         (spriteURL + ".png", 5, [0x89, 0x50, 0x4E, 0x47, 1, 2, 3]), (spriteURL + ".json", 6, Array(#"{"dot":{"x":0}}"#.utf8)),
         (spriteURL + "@2x.png", 5, [0x89, 0x50, 0x4E, 0x47, 4, 5, 6]), (spriteURL + "@2x.json", 6, Array(#"{"dot":{"x":1}}"#.utf8))]
    }

    /// Writes the database at `path` with its region's style at `styleURL`.
    /// `definitions`: the `regions` rows' definitions (default: the one `definition(styleURL:)`),
    /// each linked to every resource and tile.
    public static func write(to path: String, styleURL: String, description: [UInt8] = Array(#"{"name":"Phone pack"}"#.utf8),
                             definitions: [String]? = nil, now: Int64 = 1_800_000_000) throws {
        let database = try Database(path: path, mode: .readWriteCreate)
        // createSchema(): vacuum() switches to incremental auto-vacuum, then journal and sync modes.
        try database.execute("PRAGMA auto_vacuum = INCREMENTAL")
        try database.execute("VACUUM")
        try database.execute("PRAGMA journal_mode = DELETE")
        try database.execute("PRAGMA synchronous = FULL")
        try database.execute("BEGIN")
        try database.execute(schema6)
        try database.execute("COMMIT")

        for definition in definitions ?? [definition(styleURL: styleURL)] {
            try database.execute("INSERT INTO regions (definition, description) VALUES (?1, ?2)",
                                 [.text(definition), .blob(description)])
            try writeRegionRows(database, region: database.lastInsertedRowID, styleURL: styleURL, now: now)
        }
        // putResourceWithUrl / preloadData: an ambient row of kind 0, in no region.
        try database.execute("""
            INSERT OR IGNORE INTO resources (url, kind, etag, expires, must_revalidate, modified, accessed, data, compressed)
            VALUES                (?1,  ?2,   ?3,   ?4,      ?5,              ?6,       ?7,       ?8,   ?9)
            """, [.text(ambientURL), .integer(0), .null, .null, .integer(0), .null, .integer(now), .blob(Array("{}".utf8)), .integer(0)])
    }

    /// `putResource`/`putTile` of every row of a region, linked by `markUsed` (rows already
    /// stored for an earlier region are linked again, as MapLibre's upsert keeps their ids).
    private static func writeRegionRows(_ database: Database, region: Int64, styleURL: String, now: Int64) throws {
        for resource in resources(styleURL: styleURL) {
            let (data, compressed) = stored(resource.body)
            try database.execute("""
                INSERT OR IGNORE INTO resources (url, kind, etag, expires, must_revalidate, modified, accessed, data, compressed)
                VALUES                (?1,  ?2,   ?3,   ?4,      ?5,              ?6,       ?7,       ?8,   ?9)
                """, [.text(resource.url), .integer(resource.kind), .text("\"\(resource.url.utf8.count)\""),
                      .integer(now + 86_400), .integer(0), .integer(now - 3_600), .integer(now), .blob(data),
                      .integer(compressed ? 1 : 0)])
            try database.execute("""
                INSERT OR IGNORE INTO region_resources (region_id, resource_id)
                SELECT ?1, resources.id FROM resources WHERE resources.url = ?2
                """, [.integer(region), .text(resource.url)])
        }
        for tile in tiles {
            let (data, compressed) = stored(tile.body)
            try database.execute("""
                INSERT OR IGNORE INTO tiles (url_template, pixel_ratio, x,  y,  z,  modified, must_revalidate, etag, expires, accessed,  data, compressed)
                VALUES            (?1,           ?2,          ?3, ?4, ?5, ?6,       ?7,              ?8,   ?9,      ?10,       ?11,  ?12)
                """, [.text(tileTemplate), .integer(1), .integer(tile.x), .integer(tile.y), .integer(tile.z), .integer(now - 3_600),
                      .integer(0), .null, .integer(now + 86_400), .integer(now), .blob(data), .integer(compressed ? 1 : 0)])
            try database.execute("""
                INSERT OR IGNORE INTO region_tiles (region_id, tile_id)
                SELECT ?1, tiles.id FROM tiles WHERE url_template = ?2 AND pixel_ratio = ?3 AND x = ?4 AND y = ?5 AND z = ?6
                """, [.integer(region), .text(tileTemplate), .integer(1), .integer(tile.x), .integer(tile.y), .integer(tile.z)])
        }
    }

    /// `util::compress` (zlib) when that is smaller, as `putInternal` decides.
    static func stored(_ body: [UInt8]) -> (data: [UInt8], compressed: Bool) {
        var length = compressBound(uLong(body.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let status = output.withUnsafeMutableBufferPointer { out in
            body.withUnsafeBufferPointer { compress2(out.baseAddress, &length, $0.baseAddress, uLong(body.count), Z_DEFAULT_COMPRESSION) }
        }
        guard status == Z_OK, Int(length) < body.count else { return (body, false) }
        return (Array(output[0..<Int(length)]), true)
    }
}
