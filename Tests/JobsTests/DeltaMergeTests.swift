import Foundation
import Jobs
import PackdTestSupport
import Packs
import Store
import Testing

/// A device keeps a pack current with deltas: version 1's whole file, then the delta from
/// version 1 to version 3, side-loaded with MapLibre Native's own merge rules, leave it holding
/// exactly version 3 — after refreshes that replaced tiles, turned tiles into 404s, revised the
/// style and a sprite, and one that changed nothing (and so made no version).
@Suite struct DeltaMergeTests {
    /// MapLibre Native's side-load merge (`mergeOfflineRegions` / `addContentsOfFile`, its
    /// `merge_sideloaded.sql`), rule by rule: an uploaded region is the device's region when its
    /// `definition` and `description` are the same (`IS`: NULL equals NULL), else a new one; a
    /// region tile or resource is copied when the device lacks it or when the uploaded
    /// `modified` is newer (`>`: never when either is NULL), keeping the device's id (REPLACE);
    /// then every uploaded link is added to the mapped region. Only region rows are considered,
    /// never the upload's ambient cache.
    static let sideLoadMerge = [
        """
        INSERT INTO regions (id, definition, description)
        SELECT DISTINCT NULL, u.definition, u.description FROM side.regions u
        WHERE NOT EXISTS (SELECT 1 FROM regions d WHERE d.definition = u.definition AND d.description IS u.description)
        """,
        """
        CREATE TEMPORARY TABLE mapped_regions AS
        SELECT u.id AS uploaded, d.id AS device FROM side.regions u
        JOIN regions d ON d.definition = u.definition AND d.description IS u.description
        """,
        """
        REPLACE INTO tiles (id, url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed, accessed,
                            must_revalidate)
        SELECT d.id, u.url_template, u.pixel_ratio, u.z, u.x, u.y, u.expires, u.modified, u.etag, u.data, u.compressed,
               u.accessed, u.must_revalidate
        FROM (SELECT DISTINCT t.* FROM side.region_tiles l JOIN side.tiles t ON t.id = l.tile_id) u
        LEFT JOIN tiles d ON d.url_template = u.url_template AND d.pixel_ratio = u.pixel_ratio AND d.z = u.z AND d.x = u.x
                         AND d.y = u.y
        WHERE d.id IS NULL OR u.modified > d.modified
        """,
        """
        INSERT OR IGNORE INTO region_tiles (region_id, tile_id)
        SELECT m.device, d.id FROM side.region_tiles l JOIN mapped_regions m ON m.uploaded = l.region_id
        JOIN side.tiles u ON u.id = l.tile_id
        JOIN tiles d ON d.url_template = u.url_template AND d.pixel_ratio = u.pixel_ratio AND d.z = u.z AND d.x = u.x
                    AND d.y = u.y
        """,
        """
        REPLACE INTO resources (id, url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
        SELECT d.id, u.url, u.kind, u.expires, u.modified, u.etag, u.data, u.compressed, u.accessed, u.must_revalidate
        FROM side.region_resources l JOIN side.resources u ON u.id = l.resource_id
        LEFT JOIN resources d ON d.url = u.url
        WHERE d.id IS NULL OR u.modified > d.modified
        """,
        """
        INSERT OR IGNORE INTO region_resources (region_id, resource_id)
        SELECT m.device, d.id FROM side.region_resources l JOIN mapped_regions m ON m.uploaded = l.region_id
        JOIN side.resources u ON u.id = l.resource_id JOIN resources d ON d.url = u.url
        """,
        "DROP TABLE mapped_regions",
    ]

    /// Side-loads `file` into the device database at `device`, in one transaction.
    static func sideLoad(_ file: String, into device: Database) throws {
        try device.execute("ATTACH DATABASE ?1 AS side", [.text(file)])
        defer { try? device.execute("DETACH DATABASE side") }
        try device.transaction { for statement in sideLoadMerge { try device.execute(statement) } }
        device.finalizeStatements()
    }

    /// What a MapLibre file holds for a map: each region's tiles (template, ratio, z/x/y, stored
    /// body — NULL for no content) and resources (URL, kind, stored body), in key order.
    static func content(_ path: String) throws -> (regions: Int64, tiles: [[DatabaseValue]], resources: [[DatabaseValue]]) {
        let database = try Database(path: path, mode: .readOnly)
        var tiles: [[DatabaseValue]] = []
        try database.makeStatement("""
            SELECT t.url_template, t.pixel_ratio, t.z, t.x, t.y, t.data, t.compressed
            FROM region_tiles l JOIN tiles t ON t.id = l.tile_id ORDER BY 1, 2, 3, 4, 5
            """).forEachRow { row in tiles.append((0..<7).map { row.value(at: Int32($0)) }) }
        var resources: [[DatabaseValue]] = []
        try database.makeStatement("""
            SELECT r.url, r.kind, r.data, r.compressed FROM region_resources l JOIN resources r ON r.id = l.resource_id ORDER BY 1
            """).forEachRow { row in resources.append((0..<4).map { row.value(at: Int32($0)) }) }
        return (try database.scalarInt("SELECT count(*) FROM regions") ?? 0, tiles, resources)
    }

    @Test func version1AndTheDeltaTo3MergeIntoExactlyVersion3() throws {
        let upstream = try RevisedUpstream()
        let database = try TemporaryDatabase()
        defer { upstream.stop(); database.remove() }
        let packID = try PackRevalidationTests.downloadedPack(upstream, database)
        let harness = try JobsHarness(path: database.path)
        defer { harness.close() }
        let reader = try StoreReader(path: database.path)
        #expect(try reader.pack(packID)?.version == 1)
        let tiles = try PackRevalidationTests.storedTilePaths(database, packID).map(\.path)
        try #require(tiles.count > 30)
        let files = database.directory.path
        _ = try reader.export(PackExportRequest(pack: packID, version: 1), to: files + "/v1.db")

        func refresh(_ completions: Int) throws {
            try PackRevalidationTests.invalidate(harness, packID)
            try #require(harness.waitForState(packID, "complete", count: completions), "\(harness.publishedError(packID) ?? "")")
        }
        // Version 2: tiles replaced, tiles gone.
        upstream.change(tiles: tiles[0..<10])
        upstream.remove(tiles: tiles[10..<13])
        try refresh(1)
        let two = try #require(try reader.version(2, of: packID))
        #expect(two.changedResources == 10 && two.removedResources == 3)
        // Nothing changed upstream: no version.
        try refresh(2)
        #expect(try reader.pack(packID)?.version == 2)
        // Version 3: the style and a sprite revised, tiles replaced again and anew, one more gone.
        upstream.reviseStyle()
        upstream.change(tiles: ["/sprite.json"] + tiles[5..<20])
        upstream.remove(tiles: [tiles[30]])
        try refresh(3)
        let three = try #require(try reader.version(3, of: packID))
        #expect(three.changedResources == 2 + 15 - 3 && three.removedResources == 1,
                "style, sprite, 15 tiles of which 3 still answer 404 (no change); one tile gone")
        #expect(try reader.versions(of: packID).map(\.version) == [3, 2, 1])

        let delta = try reader.export(PackExportRequest(pack: packID, version: 3, since: 1), to: files + "/delta.db")
        _ = try reader.export(PackExportRequest(pack: packID, version: 3), to: files + "/v3.db")
        #expect(delta.resources == 2 && delta.tiles == 21, "only what changed after version 1: 20 tiles and a 404, style, sprite")

        let devicePath = files + "/device.db"
        let device = try Database(path: devicePath, mode: .readWriteCreate)
        try device.execute(MapLibreWrittenDatabase.schema6)
        try Self.sideLoad(files + "/v1.db", into: device)
        let version3 = try Self.content(files + "/v3.db")
        #expect(try Self.content(devicePath).tiles != version3.tiles, "version 1 is not version 3: the check can fail")
        try Self.sideLoad(files + "/delta.db", into: device)
        let merged = try Self.content(devicePath)
        #expect(merged.regions == 1, "the delta's region is the device's region")
        // Compared as booleans: a failure names the counts, not megabytes of rows.
        let sameTiles = merged.tiles == version3.tiles, sameResources = merged.resources == version3.resources
        #expect(sameTiles, "\(merged.tiles.count) tiles on the device, \(version3.tiles.count) in version 3")
        #expect(sameResources, "\(merged.resources.count) resources on the device, \(version3.resources.count) in version 3")
        #expect(merged.tiles.filter { $0[5] == .null }.count == 4, "every tile that became a 404 is a no-content row")
    }
}
