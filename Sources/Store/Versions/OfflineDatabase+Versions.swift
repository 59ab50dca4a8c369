import CSQLite
import Packs

/// The writer's side of pack versions: numbering changes of stored rows along the store-wide
/// change sequence, and cutting versions (see `PackVersion`). Runs inside the writer's
/// transactions, so the sequence needs no lock: one writer numbers every change.
extension OfflineDatabase {
    /// The next number of the change sequence.
    func nextChange() throws -> Int64 {
        let statement = try database.cachedStatement(
            "UPDATE packd_meta SET value = value + 1 WHERE key = 'change_sequence' RETURNING value")
        defer { statement.reset() }
        guard try statement.step() else {
            throw DatabaseError(code: SQLITE_CORRUPT, message: "packd_meta has no change_sequence")
        }
        return statement.int64(at: 0)
    }

    /// Numbers a row's content as changed now.
    func recordChange(rowID: Int64, isTile: Bool) throws {
        let change = try nextChange()
        try database.cachedStatement(isTile
            ? "INSERT INTO packd_tile_changes (tile_id, change) VALUES (?1, ?2) ON CONFLICT (tile_id) DO UPDATE SET change = excluded.change"
            : "INSERT INTO packd_resource_changes (resource_id, change) VALUES (?1, ?2) ON CONFLICT (resource_id) DO UPDATE SET change = excluded.change")
            .execute([.integer(rowID), .integer(change)])
    }

    func hasBody(rowID: Int64, isTile: Bool) throws -> Bool {
        try database.scalarInt(isTile ? "SELECT data IS NOT NULL FROM tiles WHERE id = ?1"
                                      : "SELECT data IS NOT NULL FROM resources WHERE id = ?1", [.integer(rowID)]) == 1
    }

    /// The pack's current version (0 for a pack not found), looked up once per batch.
    func packVersion(_ packID: Int64, cache: inout [Int64: Int64]) throws -> Int64 {
        if let known = cache[packID] { return known }
        let version = try database.scalarInt("SELECT version FROM packd_packs WHERE region_id = ?1", [.integer(packID)]) ?? 0
        cache[packID] = version
        return version
    }

    /// Cuts versions now: the first of `completing` (a pack becoming complete), or its next one
    /// when its content changed since its last; and the next one of every other complete pack
    /// whose content the changes since the last cut changed (a tile another pack's refresh
    /// replaced). Returns the versions cut. Packs not complete now are left alone: their own
    /// completion cuts what changed under them meanwhile.
    func cutVersions(completing: Int64?, now: Int64) throws -> [PackVersion] {
        let boundary = try nextChange()
        let cutThrough = try database.scalarInt("SELECT value FROM packd_meta WHERE key = 'versions_cut_through'") ?? 0
        var packs: Set<Int64> = completing.map { [$0] } ?? []
        try database.cachedStatement("""
            SELECT DISTINCT p.region_id FROM (
              SELECT rr.region_id FROM packd_resource_changes c CROSS JOIN region_resources rr
              WHERE c.change > ?1 AND rr.resource_id = c.resource_id
              UNION SELECT rt.region_id FROM packd_tile_changes c CROSS JOIN region_tiles rt
              WHERE c.change > ?1 AND rt.tile_id = c.tile_id) changed
            JOIN packd_packs p ON p.region_id = changed.region_id
            WHERE p.state = ?2 AND p.version > 0
            """).forEachRow([.integer(cutThrough), .text(PackState.complete.rawValue)]) { packs.insert($0.int64(at: 0)) }
        var cut: [PackVersion] = []
        for packID in packs.sorted() {
            if let version = try cutVersion(packID, boundary: boundary, now: now) { cut.append(version) }
        }
        try database.execute("UPDATE packd_meta SET value = ?1 WHERE key = 'versions_cut_through'", [.integer(boundary)])
        return cut
    }

    /// The pack's first version, or its next when rows changed since its last; nil otherwise.
    private func cutVersion(_ packID: Int64, boundary: Int64, now: Int64) throws -> PackVersion? {
        var pack: (version: Int64, name: String, description: [UInt8]?)?
        try database.cachedStatement("""
            SELECT p.version, p.name, r.description FROM packd_packs p JOIN regions r ON r.id = p.region_id WHERE p.region_id = ?1
            """).forEachRow([.integer(packID)]) { pack = ($0.int64(at: 0), $0.string(at: 1) ?? "", $0.blob(at: 2)) }
        guard let pack else { return nil }
        let totals = try progress(packID)
        let previous = try VersionQueries.version(pack.version, of: packID, in: database)
        var changed = (rows: Int64(0), bytes: Int64(0), removed: Int64(0))
        if let previous {
            try database.cachedStatement(VersionQueries.changedRows()).forEachRow([.integer(packID), .integer(previous.changeBoundary)]) {
                if $0.int64(at: 2) != 0 {
                    changed.removed += 1
                } else {
                    changed.rows += 1
                    changed.bytes += $0.int64(at: 3)
                }
            }
            guard changed.rows + changed.removed > 0 else { return nil }
        } else {
            // The first version: everything it holds with content is new.
            let empty = try database.scalarInt("""
                SELECT (SELECT count(*) FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
                        WHERE rr.region_id = ?1 AND r.data IS NULL)
                     + (SELECT count(*) FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
                        WHERE rt.region_id = ?1 AND t.data IS NULL)
                """, [.integer(packID)]) ?? 0
            changed = (totals.completedResources - empty, totals.completedBytes, 0)
        }
        let version = PackVersion(
            packID: packID, version: pack.version + 1, createdAt: max(now, (previous?.createdAt ?? now - 1) + 1),
            changeBoundary: boundary, resources: totals.completedResources, tiles: totals.completedTiles,
            bytes: totals.completedBytes, changedResources: changed.rows, changedBytes: changed.bytes,
            removedResources: changed.removed, name: pack.name, regionDescription: previous?.regionDescription ?? pack.description)
        try database.cachedStatement("""
            INSERT INTO packd_versions (\(VersionQueries.columns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            """).execute([
                .integer(packID), .integer(version.version), .integer(version.createdAt), .integer(boundary),
                .integer(version.resources), .integer(version.tiles), .integer(version.bytes),
                .integer(version.changedResources), .integer(version.changedBytes), .integer(version.removedResources),
                .text(version.name), DatabaseValue(version.regionDescription),
            ])
        try database.execute("UPDATE packd_packs SET version = ?2 WHERE region_id = ?1", [.integer(packID), .integer(version.version)])
        try database.execute("DELETE FROM packd_versions WHERE pack_id = ?1 AND version <= ?2",
                             [.integer(packID), .integer(version.version - Int64(keepVersions))])
        return version
    }
}
