import Foundation
import Packs
import Store

/// Fills a pack that exists (created through `POST /v1/packs`) as a finished download would
/// leave it: every tile of zooms 0…`maxZoom` of each template (PNG bytes for `.png`, other bytes
/// for the rest) of `tileBytes` each, one style resource, then `state` — and for `complete`
/// version 1, as a first completion cuts it. Written through a second connection to the
/// database at `path`, beside a running server.
public enum PackSeed {
    public static let pngTemplate = "https://tiles.example.org/{z}/{x}/{y}.png"
    public static let vectorTemplate = "https://tiles.example.org/v/{z}/{x}/{y}.pbf"

    public static func fill(pack: Int64, databasePath path: String, templates: [String] = [pngTemplate], maxZoom: Int = 1,
                            tileBytes: Int = 300, state: PackState = .complete, salt: UInt32 = 1) throws {
        let database = try Database(path: path, mode: .readWrite)
        try database.transaction {
            var state32 = salt
            for template in templates {
                for z in 0...maxZoom {
                    for x in 0..<(1 << z) {
                        for y in 0..<(1 << z) {
                            var body: [UInt8] = template.hasSuffix(".png") ? [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] : [0x1A, 0x02]
                            body.reserveCapacity(tileBytes)
                            while body.count < tileBytes {
                                state32 = state32 &* 1_664_525 &+ 1_013_904_223
                                body.append(UInt8(truncatingIfNeeded: state32 >> 24))
                            }
                            try database.execute("""
                                INSERT INTO tiles (url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed, accessed,
                                                   must_revalidate)
                                VALUES (?1, 1, ?2, ?3, ?4, 2000000000, 1700000000, ?5, ?6, 0, 1700000000, 0)
                                """, [.text(template), .integer(Int64(z)), .integer(Int64(x)), .integer(Int64(y)),
                                      .text("\"\(z)-\(x)-\(y)\""), .blob(body)])
                            try database.execute("INSERT INTO region_tiles (region_id, tile_id) VALUES (?1, ?2)",
                                                 [.integer(pack), .integer(database.lastInsertedRowID)])
                        }
                    }
                }
            }
            try database.execute("""
                INSERT INTO resources (url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
                VALUES (?1, 1, NULL, 1700000000, NULL, ?2, 0, 1700000000, 1)
                """, [.text("https://example.org/style-\(pack).json"), .blob(Array(#"{"version":8,"sources":{},"layers":[]}"#.utf8))])
            try database.execute("INSERT INTO region_resources (region_id, resource_id) VALUES (?1, ?2)",
                                 [.integer(pack), .integer(database.lastInsertedRowID)])
            try database.execute("UPDATE packd_packs SET state = ?2 WHERE region_id = ?1", [.integer(pack), .text(state.rawValue)])
            guard state == .complete else { return }
            try database.execute("UPDATE packd_meta SET value = value + 1 WHERE key = 'change_sequence'")
            try database.execute("""
                INSERT INTO packd_versions (pack_id, version, created_at, change_boundary, resources, tiles, bytes, changed_resources,
                                            changed_bytes, removed_resources, name, description)
                SELECT p.region_id, 1, 1700000000, (SELECT value FROM packd_meta WHERE key = 'change_sequence'),
                       rows.count, rows.tiles, rows.bytes, rows.count, rows.bytes, 0, p.name, r.description
                FROM packd_packs p JOIN regions r ON r.id = p.region_id,
                     (SELECT count(*) AS count, sum(tile) AS tiles, sum(bytes) AS bytes FROM (
                        SELECT 1 AS tile, LENGTH(t.data) AS bytes FROM region_tiles l JOIN tiles t ON t.id = l.tile_id WHERE l.region_id = ?1
                        UNION ALL SELECT 0, LENGTH(s.data) FROM region_resources l JOIN resources s ON s.id = l.resource_id
                        WHERE l.region_id = ?1)) rows
                WHERE p.region_id = ?1
                """, [.integer(pack)])
            try database.execute("UPDATE packd_packs SET version = 1 WHERE region_id = ?1", [.integer(pack)])
        }
    }
}
