import Foundation
import Packs
import Postgres
import Store

/// Exports in cluster mode go through SQLite mode's own exporters, so a file exported by any node
/// is byte for byte the one SQLite mode writes for the same version: the pack's rows (every
/// resource and tile, or the one tileset an archive holds, or a delta's changed rows) are first
/// copied from PostgreSQL into a scratch file with MapLibre's schema and the packd tables an export
/// reads (`ExportStageSchema`: the pack's version, its version rows, its rows' change numbers), the
/// region keeping the pack's id; then `StoreReader.export` reads it exactly as it reads a packd
/// database. The copy pages through the pack's links by row id (bounded pages: memory stays flat)
/// inside the reader's snapshot, so the export is one consistent state of the pack however many
/// nodes write meanwhile.
enum PostgresExportStage {
    static let pageSize = 512

    /// Copies what `request` needs of its pack — `tileSource`'s tiles only for an archive — to a
    /// new file at `path`.
    static func stage(_ request: PackExportRequest, tileSource: PackTileSource?, from reader: PostgresStoreConnection,
                      to path: String) throws {
        try? FileManager.default.removeItem(atPath: path)
        let output = try Database(path: path, mode: .readWriteCreate)
        try output.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE")
        try output.execute(OfflineSchema.ddl)
        try output.execute(ExportStageSchema.ddl)
        let pack = request.pack
        try output.transaction {
            guard let region = try reader.query("""
                SELECT r.definition, r.description, p.name, p.version, p.updated_at
                FROM regions r JOIN packd_packs p ON p.region_id = r.id WHERE r.id = $1
                """, [.int8(pack)]).first
            else { throw ExportError.packNotFound(pack) }
            try output.execute("INSERT INTO regions (id, definition, description) VALUES (?1, ?2, ?3)",
                               [.integer(pack), .text(try region.string(0)), DatabaseValue(try region.bytesOrNil(1))])
            let current = try region.int64(3)
            try output.execute("INSERT INTO packd_packs (region_id, name, version, updated_at) VALUES (?1, ?2, ?3, ?4)",
                               [.integer(pack), .text(try region.string(2)), .integer(current), .integer(try region.int64(4))])
            let versions = try reader.versions(of: pack)
            for version in versions { try insert(version, into: output) }
            // The stage holds only the rows the export writes: whether the pack's other rows moved
            // past its current version is asked here, of all of them (SQLite mode asks the same).
            if let wanted = request.version, wanted == current, let version = versions.first(where: { $0.version == current }),
               try reader.changedSince(version.changeBoundary, pack: pack) {
                throw ExportError.versionChanging(wanted)
            }
            let since = request.since.flatMap { since in versions.first { $0.version == since }?.changeBoundary }
            if tileSource == nil { try copyResources(pack, since: since, from: reader, to: output) }
            try copyTiles(pack, source: tileSource, since: since, from: reader, to: output)
        }
        output.finalizeStatements()
    }

    private static func insert(_ version: PackVersion, into output: Database) throws {
        try output.execute("""
            INSERT INTO packd_versions (\(ExportStageSchema.versionColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            """, [.integer(version.packID), .integer(version.version), .integer(version.createdAt), .integer(version.changeBoundary),
                  .integer(version.resources), .integer(version.tiles), .integer(version.bytes),
                  .integer(version.changedResources), .integer(version.changedBytes), .integer(version.removedResources),
                  .text(version.name), DatabaseValue(version.regionDescription)])
    }

    /// `since`: a delta's base boundary (only rows numbered above it), nil for every row.
    private static func copyResources(_ pack: Int64, since: Int64?, from reader: PostgresStoreConnection,
                                      to output: Database) throws {
        let insert = try output.cachedStatement("""
            INSERT INTO resources (url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
            """)
        let link = try output.cachedStatement("INSERT INTO region_resources (region_id, resource_id) VALUES (?1, ?2)")
        let change = try output.cachedStatement("INSERT INTO packd_resource_changes (resource_id, change) VALUES (?1, ?2)")
        var after: Int64 = 0
        while true {
            let rows = try reader.query("""
                SELECT r.id, r.url, r.kind::int8, r.expires, r.modified, r.etag, r.data, r.compressed, r.accessed, r.must_revalidate,
                       c.change
                FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
                LEFT JOIN packd_resource_changes c ON c.resource_id = r.id
                WHERE rr.region_id = $1 AND rr.resource_id > $2 AND ($4::int8 IS NULL OR c.change > $4)
                ORDER BY rr.resource_id LIMIT $3
                """, [.int8(pack), .int8(after), .int8(Int64(pageSize)), PostgresValue(since)])
            for row in rows {
                after = try row.int64(0)
                try insert.execute([.text(try row.string(1)), .integer(try row.int64(2)), DatabaseValue(try row.int64OrNil(3)),
                                    DatabaseValue(try row.int64OrNil(4)), DatabaseValue(try row.stringOrNil(5)),
                                    DatabaseValue(try row.bytesOrNil(6)), DatabaseValue(try row.bool(7)), .integer(try row.int64(8)),
                                    DatabaseValue(try row.bool(9))])
                let id = output.lastInsertedRowID
                try link.execute([.integer(pack), .integer(id)])
                if let number = try row.int64OrNil(10) { try change.execute([.integer(id), .integer(number)]) }
            }
            if rows.count < pageSize { return }
        }
    }

    private static func copyTiles(_ pack: Int64, source: PackTileSource?, since: Int64?, from reader: PostgresStoreConnection,
                                  to output: Database) throws {
        let insert = try output.cachedStatement("""
            INSERT INTO tiles (url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed, accessed,
                               must_revalidate)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            """)
        let link = try output.cachedStatement("INSERT INTO region_tiles (region_id, tile_id) VALUES (?1, ?2)")
        let change = try output.cachedStatement("INSERT INTO packd_tile_changes (tile_id, change) VALUES (?1, ?2)")
        var after: Int64 = 0
        while true {
            let rows = try reader.query("""
                SELECT t.id, tt.url_template, t.pixel_ratio::int8, t.z::int8, t.x::int8, t.y::int8, t.expires, t.modified,
                       t.etag, t.data, t.compressed, t.accessed, t.must_revalidate, c.change
                FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id JOIN tile_templates tt ON tt.id = t.template_id
                LEFT JOIN packd_tile_changes c ON c.tile_id = t.id
                WHERE rt.region_id = $1 AND rt.tile_id > $2
                  AND ($4::text IS NULL OR (tt.url_template = $4 AND t.pixel_ratio = $5 AND t.data IS NOT NULL))
                  AND ($6::int8 IS NULL OR c.change > $6)
                ORDER BY rt.tile_id LIMIT $3
                """, [.int8(pack), .int8(after), .int8(Int64(pageSize)), PostgresValue(source?.urlTemplate),
                      .int8(source?.pixelRatio ?? 0), PostgresValue(since)])
            for row in rows {
                after = try row.int64(0)
                try insert.execute([.text(try row.string(1)), .integer(try row.int64(2)), .integer(try row.int64(3)),
                                    .integer(try row.int64(4)), .integer(try row.int64(5)), DatabaseValue(try row.int64OrNil(6)),
                                    DatabaseValue(try row.int64OrNil(7)), DatabaseValue(try row.stringOrNil(8)),
                                    DatabaseValue(try row.bytesOrNil(9)), DatabaseValue(try row.bool(10)),
                                    .integer(try row.int64(11)), DatabaseValue(try row.bool(12))])
                let id = output.lastInsertedRowID
                try link.execute([.integer(pack), .integer(id)])
                if let number = try row.int64OrNil(13) { try change.execute([.integer(id), .integer(number)]) }
            }
            if rows.count < pageSize { return }
        }
    }
}

/// Exports read a snapshot of the pack on a reader: staged, then written by SQLite mode's exporters.
extension PostgresStoreConnection {
    public func export(_ request: PackExportRequest, to path: String) throws(ExportError) -> PackExportSummary {
        if let problem = request.problem { throw problem }
        let tileSource = request.format.archive == nil ? nil : try tileSources(pack: request.pack).choose(urlTemplate: request.source)
        let staged = path + ".stage"
        defer { try? FileManager.default.removeItem(atPath: staged) }
        try Self.exporting { try PostgresExportStage.stage(request, tileSource: tileSource, from: self, to: staged) }
        let database: Database
        do {
            database = try Database(path: staged, mode: .readOnly)
        } catch {
            throw .store(error.storeError)
        }
        return try StoreReader.export(request, from: database, to: path)
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

    /// Whether any of the pack's rows is numbered above `boundary` (its content moved past the
    /// version cut there).
    func changedSince(_ boundary: Int64, pack: Int64) throws -> Bool {
        try scalar("""
            SELECT (EXISTS (SELECT 1 FROM packd_resource_changes c JOIN region_resources rr ON rr.resource_id = c.resource_id
                            WHERE c.change > $2 AND rr.region_id = $1)
                 OR EXISTS (SELECT 1 FROM packd_tile_changes c JOIN region_tiles rt ON rt.tile_id = c.tile_id
                            WHERE c.change > $2 AND rt.region_id = $1))::int::int8
            """, [.int8(pack), .int8(boundary)]) == 1
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
