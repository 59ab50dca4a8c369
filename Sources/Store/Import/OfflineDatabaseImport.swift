import Packs
import CSQLite
import Foundation

/// Merges a validated MapLibre offline database into packd's, with MapLibre's own rules
/// (`merge_sideloaded.sql`): a region with the same definition and description is the same
/// region; a tile or resource already stored is replaced only when the upload's `modified` is
/// newer (a missing `modified` never replaces, on either side); only rows linked to a region are
/// taken, never the upload's ambient cache. Unlike MapLibre's SQL it updates rows in place
/// instead of `REPLACE`, so ids stay stable and other packs' links survive. Runs on the writer's
/// connection (the single writer), in one transaction: all or nothing.
public enum OfflineDatabaseImport {
    /// Longest pack name taken from an uploaded description.
    public static let maximumNameLength = 256

    /// `tileLimit`: the most distinct tiles all packs may link (`OfflineDatabase.tileLimit`); an
    /// upload that would exceed it is refused whole. Prefer `OfflineDatabase.importOfflineDatabase`,
    /// which also re-bases the writer's maintained ambient size.
    public static func merge(_ upload: ValidatedImport, into database: Database, tileLimit: Int64? = nil,
                             now: Int64 = WallClock.system.now) throws(ImportError) -> [ImportOutcome.ImportedPack] {
        try ValidatedImport.run(database) {
            // Also protects the writer's connection while untrusted content is attached.
            try database.setConfig(SQLITE_DBCONFIG_DEFENSIVE, true)
            try database.execute("PRAGMA trusted_schema = OFF")
            try database.execute("ATTACH DATABASE ?1 AS side", [.text(ValidatedImport.readOnlyURI(upload.path))])
        }
        defer { try? database.execute("DETACH DATABASE side") }
        var packs: [ImportOutcome.ImportedPack] = []
        try ValidatedImport.run(database) {
            if sqlite3_compileoption_used("USE_URI") == 1, sqlite3_db_readonly(database.handle, "side") != 1 {
                throw ImportError.file("the upload could not be attached read-only")
            }
            // The file was checked before; check again what is actually attached.
            guard let shape = OfflineSchemaShape.version(6) else { return }
            try shape.check(database, schema: "side")
            guard try database.scalarInt("PRAGMA side.user_version") == OfflineSchema.userVersion else {
                throw ImportError.unsupportedVersion(try database.scalarInt("PRAGMA side.user_version") ?? 0)
            }
            packs = try database.transaction { () throws -> [ImportOutcome.ImportedPack] in
                let lastRegion = try database.scalarInt("SELECT max(id) FROM main.regions") ?? 0
                for statement in MergeStatements.all { try database.execute(statement) }
                var packs: [ImportOutcome.ImportedPack] = []
                try database.makeStatement("SELECT DISTINCT main_region_id FROM temp.region_mapping ORDER BY 1").forEachRow { row in
                    let id = row.int64(at: 0)
                    packs.append(ImportOutcome.ImportedPack(id: id, added: id > lastRegion))
                }
                for pack in packs {
                    try ensurePackRow(pack.id, in: database, now: now)
                    let progress = try ProgressQueries.recount(pack.id, in: database)
                    try database.execute(MergeStatements.storeProgress, [
                        .integer(pack.id), .integer(progress.completedResources), .integer(progress.completedBytes),
                        .integer(progress.completedTiles), .integer(progress.completedTileBytes)])
                    try database.execute("UPDATE packd_packs SET updated_at = ?2 WHERE region_id = ?1", [.integer(pack.id), .integer(now)])
                }
                let linkedTiles = try ProgressQueries.recountLinkedTiles(in: database)
                if let tileLimit, linkedTiles > tileLimit {
                    throw ImportError.tileLimitExceeded(tiles: linkedTiles, limit: tileLimit)
                }
                try database.execute("UPDATE packd_totals SET linked_tiles = ?1 WHERE id = 1", [.integer(linkedTiles)])
                try database.execute("DROP TABLE temp.region_mapping")
                return packs
            }
        }
        return packs
    }

    /// A region MapLibre merged gets packd's pack row: named from the description when it is a
    /// JSON object with a `name` (the common MapLibre app convention), the description kept as
    /// the pack's opaque context. Imported packs are `inactive`: packd cannot know whether the
    /// upload was complete until a download checks it.
    private static func ensurePackRow(_ id: Int64, in database: Database, now: Int64) throws {
        guard try database.scalarInt("SELECT count(*) FROM packd_packs WHERE region_id = ?1", [.integer(id)]) == 0 else {
            return
        }
        var description: [UInt8]?
        try database.cachedStatement("SELECT description FROM regions WHERE id = ?1").forEachRow([.integer(id)]) { row in
            description = row.blob(at: 0)
        }
        try database.execute("""
            INSERT INTO packd_packs (region_id, name, state, context, created_at, updated_at, expected_resources,
                                     expected_tiles, expected_is_precise)
            VALUES (?1, ?2, 'inactive', ?3, ?4, ?4,
                    (SELECT count(*) FROM region_resources WHERE region_id = ?1) + (SELECT count(*) FROM region_tiles WHERE region_id = ?1),
                    (SELECT count(*) FROM region_tiles WHERE region_id = ?1), 0)
            """, [.integer(id), .text(packName(description, id: id)), DatabaseValue(description), .integer(now)])
    }

    /// A merged region's pack name: the description's `name` when it is a JSON object with one,
    /// else "Imported region <id>".
    public static func packName(_ description: [UInt8]?, id: Int64) -> String {
        if let description, description.count <= 1 << 20,
           let object = try? JSONSerialization.jsonObject(with: Data(description)) as? [String: Any],
           let name = object["name"] as? String, !name.isEmpty {
            return String(name.prefix(maximumNameLength))
        }
        return "Imported region \(id)"
    }
}
