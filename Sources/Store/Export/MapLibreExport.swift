import Foundation
import Packs

/// Writes one pack as a MapLibre Native offline database (schema 6, nothing else): its region
/// row, the resources and tiles linked to it (ambient cache and other packs' rows excluded), and
/// the links, with ids renumbered from 1 in key order (resources by URL, tiles by template, ratio and
/// z/x/y) — not in the order a download happened to store them — so the same pack exports as the
/// same bytes whatever wrote it (SQLite mode, or any node of a cluster, which stages its rows
/// into a file like this one first). A phone merges it with `mergeOfflineRegions` /
/// `addContentsOfFile`; packd merges it with `OfflineDatabaseImport`. The copy runs inside
/// SQLite (`INSERT … SELECT` from the attached pack database), so rows stream page by page.
public enum MapLibreExport {
    public struct Summary: Equatable, Sendable {
        public let resources: Int
        public let tiles: Int
    }

    /// Exports `pack` of the packd database at `databasePath` to a new file at `path` (replaced
    /// if present). The pack database is only read, through its own connection.
    public static func write(pack: Int64, databasePath: String, to path: String) throws(ExportError) -> Summary {
        do {
            try? FileManager.default.removeItem(atPath: path)
            let output = try Database(path: path, mode: .readWriteCreate)
            // As MapLibre creates its own file: incremental auto-vacuum before the first table,
            // rollback journal (a phone opens it without -wal/-shm companions).
            try output.execute("PRAGMA auto_vacuum = INCREMENTAL; PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF")
            try output.execute(OfflineSchema.ddl)
            try output.execute("PRAGMA user_version = \(OfflineSchema.userVersion)")
            try output.execute("ATTACH DATABASE ?1 AS pack", [.text(databasePath)])
            defer { try? output.execute("DETACH DATABASE pack") }
            let summary = try output.transaction { () throws -> Summary in
                try output.execute(
                    "INSERT INTO regions (id, definition, description) SELECT 1, definition, description FROM pack.regions WHERE id = ?1",
                    [.integer(pack)])
                guard output.changes == 1 else { throw ExportError.packNotFound(pack) }
                try output.execute("""
                    INSERT INTO resources (url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
                    SELECT r.url, r.kind, r.expires, r.modified, r.etag, r.data, r.compressed, r.accessed, r.must_revalidate
                    FROM pack.region_resources rr JOIN pack.resources r ON r.id = rr.resource_id
                    WHERE rr.region_id = ?1 ORDER BY r.url
                    """, [.integer(pack)])
                let resources = output.changes
                try output.execute("""
                    INSERT INTO tiles (url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed,
                                       accessed, must_revalidate)
                    SELECT t.url_template, t.pixel_ratio, t.z, t.x, t.y, t.expires, t.modified, t.etag, t.data,
                           t.compressed, t.accessed, t.must_revalidate
                    FROM pack.region_tiles rt JOIN pack.tiles t ON t.id = rt.tile_id
                    WHERE rt.region_id = ?1 ORDER BY t.url_template, t.pixel_ratio, t.z, t.x, t.y
                    """, [.integer(pack)])
                let tiles = output.changes
                // Every row in this file belongs to the one region.
                try output.execute("INSERT INTO region_resources (region_id, resource_id) SELECT 1, id FROM resources")
                try output.execute("INSERT INTO region_tiles (region_id, tile_id) SELECT 1, id FROM tiles")
                return Summary(resources: resources, tiles: tiles)
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
}
