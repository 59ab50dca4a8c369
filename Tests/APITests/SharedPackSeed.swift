import PackdTestSupport
import Foundation
import Packs
import Store

/// A pack with stored tiles and a resource for the export and import tests: created through
/// `POST /v1/packs` (a real pack row), then filled and marked through a second connection as a
/// finished download would leave it.
enum SharedPackSeed {
    static let pngTemplate = "https://tiles.example.org/{z}/{x}/{y}.png"
    static let vectorTemplate = "https://tiles.example.org/v/{z}/{x}/{y}.pbf"

    /// Creates a pack holding every tile of zooms 0…`maxZoom` of each template (PNG bytes for
    /// `.png`, other bytes for the rest) of `tileBytes` each, and one style resource; `state`
    /// is set last. Returns the pack id.
    static func pack(in fixture: RoutesFixture, templates: [String] = [pngTemplate], maxZoom: Int = 1,
                     tileBytes: Int = 300, state: PackState = .complete, salt: UInt32 = 1) throws -> Int64 {
        let created = try fixture.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion(maxZoom: maxZoom)), "start": false}"#)
        guard created.status == 201, let id = created.json["id"] as? Int else {
            throw ClientFailure(description: "creating the pack: \(created.status) \(created.body)")
        }
        let pack = Int64(id)
        let database = try Database(path: fixture.path, mode: .readWrite)
        try database.transaction {
            var state32 = salt
            for template in templates {
                for z in 0...maxZoom {
                    for x in 0..<(1 << z) {
                        for y in 0..<(1 << z) {
                            var body: [UInt8] = template.hasSuffix(".png") ? [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] : [0x1A, 0x02]
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
        }
        return pack
    }

    /// Every tile and resource of `pack` with its key and stored body, in a stable order: two
    /// databases hold the same pack content exactly when these are equal. The cache columns are
    /// not content: an export writes its version's time and no validators (`MapLibreExport`).
    static func contents(of pack: Int64, at path: String) throws -> [[DatabaseValue]] {
        let database = try Database(path: path, mode: .readOnly)
        var result: [[DatabaseValue]] = []
        try database.makeStatement("""
            SELECT t.url_template, t.pixel_ratio, t.z, t.x, t.y, t.data, t.compressed
            FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id WHERE rt.region_id = ?1
            ORDER BY t.url_template, t.pixel_ratio, t.z, t.x, t.y
            """).forEachRow([.integer(pack)]) { row in result.append((0..<row.columnCount).map { row.value(at: $0) }) }
        try database.makeStatement("""
            SELECT r.url, r.kind, r.data, r.compressed
            FROM region_resources rr JOIN resources r ON r.id = rr.resource_id WHERE rr.region_id = ?1 ORDER BY r.url
            """).forEachRow([.integer(pack)]) { row in result.append((0..<row.columnCount).map { row.value(at: $0) }) }
        return result
    }
}
