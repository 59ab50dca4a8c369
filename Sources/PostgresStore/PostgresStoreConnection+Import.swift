import Foundation
import Packs
import Postgres
import Store

/// Merging an uploaded MapLibre offline database into the cluster database, with MapLibre's rules
/// as SQLite mode applies them (`OfflineDatabaseImport`, `MergeStatements`): a region with the
/// same definition and description is the same pack; a row already stored is replaced only when
/// the upload's `modified` is newer (NULL never replaces); only region-linked rows are taken.
/// The upload — checked by `ValidatedImport`, opened read-only and defensively — is copied in
/// bounded pages into temporary tables, then merged by set-based statements, all in one
/// transaction on the writer: all of it or nothing, and nothing else of this node commits between
/// the preview's counts and the merge.
extension PostgresStoreConnection {
    static let importPageSize = 256

    public func importUpload(_ upload: any CheckedUpload) throws(ImportError) -> ImportOutcome {
        guard let upload = upload as? ValidatedImport else { throw .file("the upload was not checked by this store") }
        let side = try upload.openForReading()
        do {
            return try transaction { () throws -> ImportOutcome in
                try stageUpload(side)
                let preview = try importPreview()
                let packs = try mergeStaged(now: clock.now)
                // Complete packs whose content the merge changed get their next version.
                let versions = try cutVersions(completing: nil, now: clock.now)
                return ImportOutcome(packs: packs, resources: preview.resources, tiles: preview.tiles,
                                     unchangedPacks: preview.unchangedPacks, unchangedRegions: preview.unchangedRegions,
                                     createdVersions: versions)
            }
        } catch let error as ImportError {
            forgetUncommittedTemplates()
            throw error
        } catch let error as PostgresError where error.sqlState?.hasPrefix("22") == true {
            // A value PostgreSQL cannot hold (text that is not UTF-8, a NUL byte): the upload's.
            forgetUncommittedTemplates()
            throw .invalidRows(error.message)
        } catch let error as DatabaseError {
            forgetUncommittedTemplates()
            throw error.isCorrupt ? .corrupt(error.message) : .store(error.storeError)
        } catch {
            forgetUncommittedTemplates()
            throw .store(Self.storeError(error))
        }
    }

    // MARK: Staging

    private func stageUpload(_ side: Database) throws {
        try connection.execute("""
            CREATE TEMPORARY TABLE side_regions (id bigint PRIMARY KEY, definition text NOT NULL, description bytea)
              ON COMMIT DROP;
            CREATE TEMPORARY TABLE side_tiles (id bigint PRIMARY KEY, url_template text NOT NULL, pixel_ratio bigint NOT NULL,
              z bigint NOT NULL, x bigint NOT NULL, y bigint NOT NULL, expires bigint, modified bigint, etag text, data bytea,
              compressed boolean NOT NULL, accessed bigint NOT NULL, must_revalidate boolean NOT NULL, template_id bigint)
              ON COMMIT DROP;
            CREATE TEMPORARY TABLE side_resources (id bigint PRIMARY KEY, url text NOT NULL, kind bigint NOT NULL,
              expires bigint, modified bigint, etag text, data bytea, compressed boolean NOT NULL, accessed bigint NOT NULL,
              must_revalidate boolean NOT NULL) ON COMMIT DROP;
            CREATE TEMPORARY TABLE side_region_tiles (region_id bigint NOT NULL, tile_id bigint NOT NULL) ON COMMIT DROP;
            CREATE TEMPORARY TABLE side_region_resources (region_id bigint NOT NULL, resource_id bigint NOT NULL) ON COMMIT DROP;
            """)
        try copy(from: side, "SELECT id, definition, description FROM regions ORDER BY id", columns: 3,
                 into: "INSERT INTO side_regions SELECT * FROM unnest($1::int8[], $2::text[], $3::bytea[])") { row in
            [.int(row.int64(at: 0)), .text(row.string(at: 1)), .bytes(row.blob(at: 2))]
        }
        try copy(from: side, "SELECT region_id, tile_id FROM region_tiles", columns: 2,
                 into: "INSERT INTO side_region_tiles SELECT * FROM unnest($1::int8[], $2::int8[])") { row in
            [.int(row.int64(at: 0)), .int(row.int64(at: 1))]
        }
        try copy(from: side, "SELECT region_id, resource_id FROM region_resources", columns: 2,
                 into: "INSERT INTO side_region_resources SELECT * FROM unnest($1::int8[], $2::int8[])") { row in
            [.int(row.int64(at: 0)), .int(row.int64(at: 1))]
        }
        // Only rows some region links: the upload's ambient cache is not imported.
        try copy(from: side, """
            SELECT id, url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed, accessed, must_revalidate
            FROM tiles WHERE id IN (SELECT tile_id FROM region_tiles) ORDER BY id
            """, columns: 13, into: """
            INSERT INTO side_tiles SELECT *, NULL FROM unnest($1::int8[], $2::text[], $3::int8[], $4::int8[], $5::int8[],
              $6::int8[], $7::int8[], $8::int8[], $9::text[], $10::bytea[], $11::bool[], $12::int8[], $13::bool[])
            """) { row in
            [.int(row.int64(at: 0)), .text(row.string(at: 1)), .int(row.int64(at: 2)), .int(row.int64(at: 3)),
             .int(row.int64(at: 4)), .int(row.int64(at: 5)), .int(row.optionalInt64(at: 6)), .int(row.optionalInt64(at: 7)),
             .text(row.string(at: 8)), .bytes(row.blob(at: 9)), .bool(row.int64(at: 10) != 0), .int(row.int64(at: 11)),
             .bool(row.int64(at: 12) != 0)]
        }
        try copy(from: side, """
            SELECT id, url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate
            FROM resources WHERE id IN (SELECT resource_id FROM region_resources) ORDER BY id
            """, columns: 10, into: """
            INSERT INTO side_resources SELECT * FROM unnest($1::int8[], $2::text[], $3::int8[], $4::int8[], $5::int8[],
              $6::text[], $7::bytea[], $8::bool[], $9::int8[], $10::bool[])
            """) { row in
            [.int(row.int64(at: 0)), .text(row.string(at: 1)), .int(row.int64(at: 2)), .int(row.optionalInt64(at: 3)),
             .int(row.optionalInt64(at: 4)), .text(row.string(at: 5)), .bytes(row.blob(at: 6)), .bool(row.int64(at: 7) != 0),
             .int(row.int64(at: 8)), .bool(row.int64(at: 9) != 0)]
        }
        let templates = try ensureTemplateIDs(try query("SELECT DISTINCT url_template FROM side_tiles").map { try $0.string(0) })
        try query("""
            UPDATE side_tiles s SET template_id = m.id FROM unnest($1::text[], $2::int8[]) AS m(url_template, id)
            WHERE s.url_template = m.url_template
            """, [.textArray(Array(templates.keys)), .int8Array(Array(templates.values))])
        try connection.execute("ANALYZE side_regions; ANALYZE side_tiles; ANALYZE side_resources")
    }

    /// One column value read from the upload.
    private enum SideValue {
        case int(Int64?)
        case text(String?)
        case bytes([UInt8]?)
        case bool(Bool)
    }

    /// Copies the rows of `select` (on the upload) into `insert` (one `unnest` insert per page).
    private func copy(from side: Database, _ select: String, columns: Int, into insert: String,
                      _ read: (Statement) -> [SideValue]) throws {
        var page = [[SideValue]](repeating: [], count: columns)
        func flush() throws {
            guard !page[0].isEmpty else { return }
            let parameters = page.map { column -> PostgresValue in
                switch column.first! {
                case .int: return .int8Array(column.map { if case .int(let value) = $0 { value } else { nil } })
                case .text: return .textArray(column.map { if case .text(let value) = $0 { value } else { nil } })
                case .bytes: return .byteaArray(column.map { if case .bytes(let value) = $0 { value } else { nil } })
                case .bool: return .boolArray(column.map { if case .bool(let value) = $0 { value } else { nil } })
                }
            }
            try query(insert, parameters)
            page = [[SideValue]](repeating: [], count: columns)
        }
        try side.makeStatement(select).forEachRow { row in
            for (index, value) in read(row).enumerated() { page[index].append(value) }
            if page[0].count >= Self.importPageSize { try flush() }
        }
        try flush()
    }

    // MARK: Preview and merge

    private static let sideTileMatch = """
        LEFT JOIN tiles t ON t.template_id = st.template_id AND t.pixel_ratio = st.pixel_ratio AND t.z = st.z
          AND t.y = st.y AND t.x = st.x
        """

    /// What the merge will change (`ImportPreview`'s rules), counted before it.
    private func importPreview() throws -> ImportPreview {
        let tiles = try scalar("""
            SELECT count(*)::int8 FROM side_tiles st \(Self.sideTileMatch) WHERE t.id IS NULL OR st.modified > t.modified
            """) ?? 0
        let resources = try scalar("""
            SELECT count(*)::int8 FROM side_resources sr LEFT JOIN resources r ON r.url = sr.url
            WHERE r.id IS NULL OR sr.modified > r.modified
            """) ?? 0
        var unchanged: Set<Int64> = [], changed: Set<Int64> = [], unchangedRegions: Int64 = 0
        for row in try query("""
            SELECT (SELECT min(r.id) FROM regions r WHERE r.definition = sr.definition
                      AND r.description IS NOT DISTINCT FROM sr.description),
              EXISTS (SELECT 1 FROM side_region_tiles srt JOIN side_tiles st ON st.id = srt.tile_id \(Self.sideTileMatch)
                      WHERE srt.region_id = sr.id AND (t.id IS NULL OR st.modified > t.modified))
              OR EXISTS (SELECT 1 FROM side_region_resources srr JOIN side_resources su ON su.id = srr.resource_id
                         LEFT JOIN resources r ON r.url = su.url
                         WHERE srr.region_id = sr.id AND (r.id IS NULL OR su.modified > r.modified))
            FROM side_regions sr
            """) {
            guard let pack = try row.int64OrNil(0) else { continue }
            if try row.bool(1) {
                changed.insert(pack)
            } else {
                unchanged.insert(pack)
                unchangedRegions += 1
            }
        }
        return ImportPreview(resources: resources, tiles: tiles, unchangedPacks: unchanged.subtracting(changed),
                             changedPacks: changed, unchangedRegions: unchangedRegions)
    }

    /// Merges the staged upload; the packs it added or merged into.
    private func mergeStaged(now: Int64) throws -> [ImportOutcome.ImportedPack] {
        let lastRegion = try scalar("SELECT coalesce(max(id), 0)::int8 FROM regions") ?? 0
        try connection.execute("""
            INSERT INTO regions (definition, description)
            SELECT definition, description FROM (
              SELECT definition, description, min(id) AS first FROM side_regions GROUP BY definition, description) sr
            WHERE NOT EXISTS (SELECT 1 FROM regions r WHERE r.definition = sr.definition
                                AND r.description IS NOT DISTINCT FROM sr.description)
            ORDER BY first;

            CREATE TEMPORARY TABLE region_mapping ON COMMIT DROP AS
            SELECT sr.id AS side_region_id, min(r.id) AS main_region_id
            FROM side_regions sr JOIN regions r ON r.definition = sr.definition AND r.description IS NOT DISTINCT FROM sr.description
            GROUP BY sr.id;
            """)
        // Rows the merge replaces, and rows it newly links to a pack that has a version, are
        // changes of those packs' content (numbered as a batch numbers them).
        try recordChanges(.tiles, ids: try query("""
            SELECT t.id FROM side_tiles st JOIN tiles t ON st.template_id = t.template_id AND st.pixel_ratio = t.pixel_ratio
              AND st.z = t.z AND st.y = t.y AND st.x = t.x
            WHERE st.modified > t.modified
            """).map { try $0.int64(0) })
        try connection.execute("""
            UPDATE tiles t SET expires = st.expires, modified = st.modified, etag = st.etag, data = st.data,
              compressed = st.compressed, accessed = st.accessed, must_revalidate = st.must_revalidate
            FROM side_tiles st
            WHERE st.template_id = t.template_id AND st.pixel_ratio = t.pixel_ratio AND st.z = t.z AND st.y = t.y AND st.x = t.x
              AND st.modified > t.modified;

            INSERT INTO tiles (template_id, pixel_ratio, z, y, x, expires, modified, etag, data, compressed, accessed,
                               must_revalidate)
            SELECT st.template_id, st.pixel_ratio, st.z, st.y, st.x, st.expires, st.modified, st.etag, st.data, st.compressed,
                   st.accessed, st.must_revalidate
            FROM side_tiles st
            WHERE NOT EXISTS (SELECT 1 FROM tiles t WHERE t.template_id = st.template_id AND t.pixel_ratio = st.pixel_ratio
                                AND t.z = st.z AND t.y = st.y AND t.x = st.x)
            ORDER BY st.id
            ON CONFLICT DO NOTHING;
            """)
        try recordChanges(.tiles, ids: try query("""
            SELECT DISTINCT t.id FROM side_region_tiles srt
            JOIN region_mapping rm ON rm.side_region_id = srt.region_id
            JOIN packd_packs p ON p.region_id = rm.main_region_id AND p.version > 0
            JOIN side_tiles st ON st.id = srt.tile_id
            JOIN tiles t ON t.template_id = st.template_id AND t.pixel_ratio = st.pixel_ratio AND t.z = st.z AND t.y = st.y
                        AND t.x = st.x
            WHERE NOT EXISTS (SELECT 1 FROM region_tiles l WHERE l.region_id = rm.main_region_id AND l.tile_id = t.id)
            """).map { try $0.int64(0) })
        try recordChanges(.resources, ids: try query("""
            SELECT r.id FROM side_resources sr JOIN resources r ON sr.url = r.url WHERE sr.modified > r.modified
            """).map { try $0.int64(0) })
        try connection.execute("""
            INSERT INTO region_tiles (region_id, tile_id)
            SELECT DISTINCT rm.main_region_id, t.id
            FROM side_region_tiles srt
            JOIN region_mapping rm ON rm.side_region_id = srt.region_id
            JOIN side_tiles st ON st.id = srt.tile_id
            JOIN tiles t ON t.template_id = st.template_id AND t.pixel_ratio = st.pixel_ratio AND t.z = st.z AND t.y = st.y
                        AND t.x = st.x
            ON CONFLICT DO NOTHING;

            UPDATE resources r SET kind = sr.kind, expires = sr.expires, modified = sr.modified, etag = sr.etag,
              data = sr.data, compressed = sr.compressed, accessed = sr.accessed, must_revalidate = sr.must_revalidate
            FROM side_resources sr
            WHERE sr.url = r.url AND sr.modified > r.modified;

            INSERT INTO resources (url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
            SELECT sr.url, sr.kind, sr.expires, sr.modified, sr.etag, sr.data, sr.compressed, sr.accessed, sr.must_revalidate
            FROM side_resources sr
            WHERE NOT EXISTS (SELECT 1 FROM resources r WHERE r.url = sr.url)
            ORDER BY sr.id
            ON CONFLICT DO NOTHING;
            """)
        try recordChanges(.resources, ids: try query("""
            SELECT DISTINCT r.id FROM side_region_resources srr
            JOIN region_mapping rm ON rm.side_region_id = srr.region_id
            JOIN packd_packs p ON p.region_id = rm.main_region_id AND p.version > 0
            JOIN side_resources sr ON sr.id = srr.resource_id
            JOIN resources r ON r.url = sr.url
            WHERE NOT EXISTS (SELECT 1 FROM region_resources l WHERE l.region_id = rm.main_region_id AND l.resource_id = r.id)
            """).map { try $0.int64(0) })
        try connection.execute("""
            INSERT INTO region_resources (region_id, resource_id)
            SELECT DISTINCT rm.main_region_id, r.id
            FROM side_region_resources srr
            JOIN region_mapping rm ON rm.side_region_id = srr.region_id
            JOIN side_resources sr ON sr.id = srr.resource_id
            JOIN resources r ON r.url = sr.url
            ON CONFLICT DO NOTHING;
            """)
        let packs = try query("SELECT DISTINCT main_region_id FROM region_mapping ORDER BY 1").map { row in
            let id = try row.int64(0)
            return ImportOutcome.ImportedPack(id: id, added: id > lastRegion)
        }
        for pack in packs {
            try ensurePackRow(pack.id, now: now)
            let progress = try recountProgress(pack.id)
            try query("""
                INSERT INTO packd_progress (pack_id, completed_resources, completed_bytes, completed_tiles, completed_tile_bytes)
                VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (pack_id) DO UPDATE SET completed_resources = excluded.completed_resources,
                  completed_bytes = excluded.completed_bytes, completed_tiles = excluded.completed_tiles,
                  completed_tile_bytes = excluded.completed_tile_bytes
                """, [.int8(pack.id), .int8(progress.completedResources), .int8(progress.completedBytes),
                      .int8(progress.completedTiles), .int8(progress.completedTileBytes)])
            try query("UPDATE packd_packs SET updated_at = $2 WHERE region_id = $1", [.int8(pack.id), .int8(now)])
        }
        let limit = try tileLimit()
        if limit != nil { try lockTileLimit() }
        let linked = try scalar("SELECT count(DISTINCT tile_id)::int8 FROM region_tiles") ?? 0
        if let limit, linked > limit { throw ImportError.tileLimitExceeded(tiles: linked, limit: limit) }
        try addTotals(linkedTiles: linked - (try linkedTileCount()), ambientBytes: 0)
        try resynchronizeAmbientCacheSize()
        return packs
    }

    /// A merged region gets its pack row, as in SQLite mode: named from its description,
    /// `inactive` (nobody knows whether the upload was complete until a download checks it).
    private func ensurePackRow(_ id: Int64, now: Int64) throws {
        guard try scalar("SELECT 1::int8 FROM packd_packs WHERE region_id = $1", [.int8(id)]) == nil else { return }
        let description = try query("SELECT description FROM regions WHERE id = $1", [.int8(id)]).first?.bytesOrNil(0)
        try query("""
            INSERT INTO packd_packs (region_id, name, state, context, created_at, updated_at, expected_resources,
                                     expected_tiles, expected_is_precise)
            VALUES ($1, $2, $3, $4, $5, $5,
                    (SELECT count(*) FROM region_resources WHERE region_id = $1) + (SELECT count(*) FROM region_tiles WHERE region_id = $1),
                    (SELECT count(*) FROM region_tiles WHERE region_id = $1), false)
            """, [.int8(id), .text(OfflineDatabaseImport.packName(description, id: id)), .text(PackState.inactive.rawValue),
                  PostgresValue(description), .int8(now)])
    }
}
