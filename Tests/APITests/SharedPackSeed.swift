import PackdTestSupport
import Foundation
import Packs
import Store

/// A pack with stored tiles and a resource for the export and import tests: created through
/// `POST /v1/packs` (a real pack row), then filled and marked by `PackSeed`.
enum SharedPackSeed {
    static let pngTemplate = PackSeed.pngTemplate
    static let vectorTemplate = PackSeed.vectorTemplate

    /// Creates a pack and fills it (`PackSeed.fill`). Returns the pack id.
    static func pack(in fixture: RoutesFixture, templates: [String] = [pngTemplate], maxZoom: Int = 1,
                     tileBytes: Int = 300, state: PackState = .complete, salt: UInt32 = 1) throws -> Int64 {
        let created = try fixture.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion(maxZoom: maxZoom)), "start": false}"#)
        guard created.status == 201, let id = created.json["id"] as? Int else {
            throw ClientFailure(description: "creating the pack: \(created.status) \(created.body)")
        }
        let pack = Int64(id)
        try PackSeed.fill(pack: pack, databasePath: fixture.path, templates: templates, maxZoom: maxZoom, tileBytes: tileBytes,
                          state: state, salt: salt)
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
