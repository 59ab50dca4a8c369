import Foundation
import Packs

/// Writes one pack as a MapLibre Native offline database (schema 6, nothing else): its region
/// row, the resources and tiles linked to it (ambient cache and other packs' rows excluded), and
/// the links. A phone merges it with `mergeOfflineRegions` / `addContentsOfFile`; packd merges it
/// with `OfflineDatabaseImport`. The copy runs inside SQLite (`INSERT … SELECT` from the attached
/// pack database), so rows stream page by page.
///
/// Deterministic: the same version of a pack gives the same bytes on every build, from SQLite
/// mode or any cluster node (which stages its rows into a file with packd's tables first).
/// - Rows are inserted in key order (resources by URL, tiles by template, ratio and z/x/y), so ids
///   are renumbered from 1 the same way whatever order a download stored them in; the file is made
///   by the same statements each time, so SQLite's header counters come out the same too.
/// - No time field is the store's: `modified` and `accessed` are the version's `created_at` (see
///   `ExportedVersion`). Versions' times increase, and a delta holds only rows changed after the
///   device's version, so each of its rows is newer than the device's copy and MapLibre's merge
///   (`st.modified > t.modified`) takes it.
/// - `expires` and `etag` are NULL and `must_revalidate` 0: a revalidation changes them without
///   changing content or version, so they cannot be part of the bytes. A side-loaded row without
///   `expires` is fresh to MapLibre (`Response::isFresh`): the device keeps what it was given until
///   the next version replaces it, rather than revalidating each tile against the upstream.
/// - The region row is the version's (`PackVersion.regionDescription`); a delta's is the base
///   version's, exactly as the device holds it, so MapLibre maps it onto the device's region.
public enum MapLibreExport {
    /// The page size of a delta's file (`since`).
    static let deltaPageSize = 1024

    public struct Summary: Equatable, Sendable {
        public let resources: Int
        public let tiles: Int
    }

    /// Exports what `request` names of the packd database at `databasePath` (or a staged copy) to
    /// a new file at `path` (replaced if present). The pack database is only read, through its own
    /// connection, in one transaction.
    public static func write(_ request: PackExportRequest, databasePath: String, to path: String) throws(ExportError) -> Summary {
        do {
            try? FileManager.default.removeItem(atPath: path)
            let output = try Database(path: path, mode: .readWriteCreate)
            // As MapLibre creates its own file: incremental auto-vacuum before the first table,
            // rollback journal (a phone opens it without -wal/-shm companions). A delta, which a
            // device only merges, gets 1 KiB pages: a row's last page is mostly empty, and small
            // pages waste less (`packd-bench delta`: 2.42 MB instead of 3.17 for 1,000 changed
            // 2 KB tiles, 12.6 instead of 13.1 for 12 KB ones); a whole version keeps MapLibre's
            // 4 KiB pages, as an app may use it as its database as it is.
            if request.since != nil { try output.execute("PRAGMA page_size = \(Self.deltaPageSize)") }
            try output.execute("PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF")
            try output.execute(OfflineSchema.ddl)
            try output.execute("PRAGMA user_version = \(OfflineSchema.userVersion)")
            try output.execute("ATTACH DATABASE ?1 AS pack", [.text(databasePath)])
            defer { try? output.execute("DETACH DATABASE pack") }
            let summary = try output.transaction { () throws -> Summary in
                let exported = try ExportedVersion.resolve(request, in: output, schema: "pack")
                return try copy(exported, in: output)
            }
            output.finalizeStatements()
            return summary
        } catch let error as ExportError {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        } catch let error as DatabaseError {
            try? FileManager.default.removeItem(atPath: path)
            throw .store(error.storeError)
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw .file("\(error)")
        }
    }

    private static func copy(_ exported: ExportedVersion, in output: Database) throws -> Summary {
        let pack = DatabaseValue.integer(exported.pack)
        let time = DatabaseValue.integer(exported.time)
        try output.execute("INSERT INTO regions (id, definition, description) SELECT 1, definition, ?2 FROM pack.regions WHERE id = ?1",
                           [pack, DatabaseValue(exported.regionDescription)])
        guard output.changes == 1 else { throw ExportError.packNotFound(exported.pack) }
        // A delta: only the rows numbered after the base version (driven from the change index).
        let arguments = [pack, time] + (exported.base.map { [DatabaseValue.integer($0.changeBoundary)] } ?? [])
        let changedResources = exported.base == nil ? "" : """
            JOIN pack.packd_resource_changes c ON c.resource_id = r.id AND c.change > ?3
            """
        let changedTiles = exported.base == nil ? "" : """
            JOIN pack.packd_tile_changes c ON c.tile_id = t.id AND c.change > ?3
            """
        try output.execute("""
            INSERT INTO resources (url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
            SELECT r.url, r.kind, NULL, ?2, NULL, r.data, r.compressed, ?2, 0
            FROM pack.region_resources rr JOIN pack.resources r ON r.id = rr.resource_id \(changedResources)
            WHERE rr.region_id = ?1 ORDER BY r.url
            """, arguments)
        let resources = output.changes
        try output.execute("""
            INSERT INTO tiles (url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed,
                               accessed, must_revalidate)
            SELECT t.url_template, t.pixel_ratio, t.z, t.x, t.y, NULL, ?2, NULL, t.data, t.compressed, ?2, 0
            FROM pack.region_tiles rt JOIN pack.tiles t ON t.id = rt.tile_id \(changedTiles)
            WHERE rt.region_id = ?1 ORDER BY t.url_template, t.pixel_ratio, t.z, t.x, t.y
            """, arguments)
        let tiles = output.changes
        // Every row in this file belongs to the one region.
        try output.execute("INSERT INTO region_resources (region_id, resource_id) SELECT 1, id FROM resources")
        try output.execute("INSERT INTO region_tiles (region_id, tile_id) SELECT 1, id FROM tiles")
        return Summary(resources: resources, tiles: tiles)
    }
}
