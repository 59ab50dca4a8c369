import Foundation
import Packs
import Postgres
import Store

/// Exports in cluster mode go through SQLite mode's own exporters, so a file exported by any node
/// is byte for byte the one SQLite mode writes for the same rows: the pack (or the one tileset an
/// archive holds) is first copied from PostgreSQL into a scratch file with MapLibre's schema, its
/// region keeping the pack's id, then `MapLibreExport` / `MBTilesExport` / `PMTilesExport` read it
/// exactly as they read a packd database. The copy pages through the pack's links by row id
/// (bounded pages: memory stays flat) inside the reader's snapshot, so the export is one
/// consistent state of the pack however many nodes write meanwhile.
enum PostgresExportStage {
    static let pageSize = 512

    /// Copies `pack` — every resource and tile, or only `source`'s tiles — to a new file at `path`.
    static func stage(pack: Int64, source: PackTileSource?, from reader: PostgresStoreConnection, to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        let output = try Database(path: path, mode: .readWriteCreate)
        try output.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE")
        try output.execute(OfflineSchema.ddl)
        try output.transaction {
            guard let region = try reader.query("SELECT definition, description FROM regions WHERE id = $1", [.int8(pack)]).first
            else { throw ExportError.packNotFound(pack) }
            try output.execute("INSERT INTO regions (id, definition, description) VALUES (?1, ?2, ?3)",
                               [.integer(pack), .text(try region.string(0)), DatabaseValue(try region.bytesOrNil(1))])
            if source == nil { try copyResources(pack, from: reader, to: output) }
            try copyTiles(pack, source: source, from: reader, to: output)
        }
        output.finalizeStatements()
    }

    private static func copyResources(_ pack: Int64, from reader: PostgresStoreConnection, to output: Database) throws {
        let insert = try output.cachedStatement("""
            INSERT INTO resources (url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            """)
        let link = try output.cachedStatement("INSERT INTO region_resources (region_id, resource_id) VALUES (?1, ?2)")
        var after: Int64 = 0
        while true {
            let rows = try reader.query("""
                SELECT r.id, r.url, r.kind::int8, r.expires, r.modified, r.etag, r.data, r.compressed, r.accessed, r.must_revalidate
                FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
                WHERE rr.region_id = $1 AND rr.resource_id > $2 ORDER BY rr.resource_id LIMIT $3
                """, [.int8(pack), .int8(after), .int8(Int64(pageSize))])
            for row in rows {
                after = try row.int64(0)
                try insert.execute([.text(try row.string(1)), .integer(try row.int64(2)), DatabaseValue(try row.int64OrNil(3)),
                                    DatabaseValue(try row.int64OrNil(4)), DatabaseValue(try row.stringOrNil(5)),
                                    DatabaseValue(try row.bytesOrNil(6)), DatabaseValue(try row.bool(7)), .integer(try row.int64(8)),
                                    DatabaseValue(try row.bool(9))])
                try link.execute([.integer(pack), .integer(output.lastInsertedRowID)])
            }
            if rows.count < pageSize { return }
        }
    }

    private static func copyTiles(_ pack: Int64, source: PackTileSource?, from reader: PostgresStoreConnection,
                                  to output: Database) throws {
        let insert = try output.cachedStatement("""
            INSERT INTO tiles (url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed, accessed,
                               must_revalidate)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            """)
        let link = try output.cachedStatement("INSERT INTO region_tiles (region_id, tile_id) VALUES (?1, ?2)")
        var after: Int64 = 0
        while true {
            let rows = try reader.query("""
                SELECT t.id, tt.url_template, t.pixel_ratio::int8, t.z::int8, t.x::int8, t.y::int8, t.expires, t.modified,
                       t.etag, t.data, t.compressed, t.accessed, t.must_revalidate
                FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id JOIN tile_templates tt ON tt.id = t.template_id
                WHERE rt.region_id = $1 AND rt.tile_id > $2
                  AND ($4::text IS NULL OR (tt.url_template = $4 AND t.pixel_ratio = $5 AND t.data IS NOT NULL))
                ORDER BY rt.tile_id LIMIT $3
                """, [.int8(pack), .int8(after), .int8(Int64(pageSize)), PostgresValue(source?.urlTemplate),
                      .int8(source?.pixelRatio ?? 0)])
            for row in rows {
                after = try row.int64(0)
                try insert.execute([.text(try row.string(1)), .integer(try row.int64(2)), .integer(try row.int64(3)),
                                    .integer(try row.int64(4)), .integer(try row.int64(5)), DatabaseValue(try row.int64OrNil(6)),
                                    DatabaseValue(try row.int64OrNil(7)), DatabaseValue(try row.stringOrNil(8)),
                                    DatabaseValue(try row.bytesOrNil(9)), DatabaseValue(try row.bool(10)),
                                    .integer(try row.int64(11)), DatabaseValue(try row.bool(12))])
                try link.execute([.integer(pack), .integer(output.lastInsertedRowID)])
            }
            if rows.count < pageSize { return }
        }
    }
}

/// Exports read a snapshot of the pack on a reader: staged, then written by SQLite mode's exporters.
extension PostgresStoreConnection {
    public func exportMapLibre(pack: Int64, to path: String) throws(ExportError) -> (resources: Int, tiles: Int) {
        let staged = path + ".stage"
        defer { try? FileManager.default.removeItem(atPath: staged) }
        try Self.exporting { try PostgresExportStage.stage(pack: pack, source: nil, from: self, to: staged) }
        let summary = try MapLibreExport.write(pack: pack, databasePath: staged, to: path)
        return (summary.resources, summary.tiles)
    }

    public func tileSources(pack: Int64) throws(ExportError) -> [PackTileSource] {
        try Self.exporting {
            guard try scalar("SELECT 1::int8 FROM regions WHERE id = $1", [.int8(pack)]) != nil else {
                throw ExportError.packNotFound(pack)
            }
            return try query("""
                SELECT tt.url_template, t.pixel_ratio::int8, count(*)::int8
                FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id JOIN tile_templates tt ON tt.id = t.template_id
                WHERE rt.region_id = $1 AND t.data IS NOT NULL
                GROUP BY tt.url_template, t.pixel_ratio ORDER BY count(*) DESC, tt.url_template COLLATE "C", t.pixel_ratio
                """, [.int8(pack)]).map { row in
                PackTileSource(urlTemplate: try row.string(0), pixelRatio: try row.int64(1), tileCount: try row.int64(2))
            }
        }
    }

    public func exportTileArchive(pack: Int64, source: PackTileSource, format: TileArchiveFormat, name: String,
                                  to path: String) throws(ExportError) -> Int {
        let staged = path + ".stage"
        defer { try? FileManager.default.removeItem(atPath: staged) }
        try Self.exporting { try PostgresExportStage.stage(pack: pack, source: source, from: self, to: staged) }
        let database: Database
        do {
            database = try Database(path: staged, mode: .readOnly)
        } catch {
            throw .store(error.storeError)
        }
        switch format {
        case .mbtiles: return try MBTilesExport.write(pack: pack, source: source, name: name, from: database, to: path).tileCount
        case .pmtiles: return try PMTilesExport.write(pack: pack, source: source, name: name, from: database, to: path).tileCount
        }
    }

    /// Runs a staging step with its failures as `ExportError`s.
    private static func exporting<T>(_ body: () throws -> T) throws(ExportError) -> T {
        do {
            return try body()
        } catch let error as ExportError {
            throw error
        } catch let error as DatabaseError {
            throw .store(error.storeError)
        } catch {
            throw .store(storeError(error))
        }
    }
}
