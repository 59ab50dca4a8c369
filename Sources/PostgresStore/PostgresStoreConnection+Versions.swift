import Packs
import Postgres

/// Pack versions in cluster mode: the SQL of `OfflineDatabase+Versions` and `VersionQueries`
/// against the cluster schema. Several nodes number changes at once, so the sequence alone does
/// not order them by commit: a transaction numbering changes holds the `changes` advisory lock
/// shared, and a cut takes it exclusively before it reads — every change numbered before the
/// cut's boundary has committed by then, and every later one is numbered above it.
extension PostgresStoreConnection {
    static let versionColumns = """
        pack_id, version, created_at, change_boundary, resources, tiles, bytes, changed_resources, changed_bytes,
        removed_resources, name, description
        """

    static func packVersion(_ row: PostgresRow) throws -> PackVersion {
        PackVersion(packID: try row.int64(0), version: try row.int64(1), createdAt: try row.int64(2),
                    changeBoundary: try row.int64(3), resources: try row.int64(4), tiles: try row.int64(5),
                    bytes: try row.int64(6), changedResources: try row.int64(7), changedBytes: try row.int64(8),
                    removedResources: try row.int64(9), name: try row.string(10), regionDescription: try row.bytesOrNil(11))
    }

    // MARK: PackVersionRepository

    public func versions(of packID: Int64) throws -> [PackVersion] {
        try query("SELECT \(Self.versionColumns) FROM packd_versions WHERE pack_id = $1 ORDER BY version DESC",
                  [.int8(packID)]).map(Self.packVersion)
    }

    public func version(_ version: Int64, of packID: Int64) throws -> PackVersion? {
        try query("SELECT \(Self.versionColumns) FROM packd_versions WHERE pack_id = $1 AND version = $2",
                  [.int8(packID), .int8(version)]).first.map(Self.packVersion)
    }

    // MARK: Numbering changes

    /// Numbers the rows' content as changed (`ids` in any order, repeats allowed).
    func recordChanges(_ table: StoredTable, ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try query("SELECT pg_advisory_xact_lock_shared($1::int4, $2::int4)",
                  [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.changes.rawValue))])
        try query(table.recordChangesSQL, [.int8Array(Set(ids).sorted())])
    }

    // MARK: Cutting versions

    /// As `OfflineDatabase.cutVersions`: the first or next version of `completing`, and the next
    /// of every other complete pack whose rows changed since the last cut.
    func cutVersions(completing: Int64?, now: Int64) throws -> [PackVersion] {
        try query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                  [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.changes.rawValue))])
        guard let boundary = try scalar("SELECT nextval('packd_changes')") else {
            throw StoreError(.other, "nextval('packd_changes') returned nothing")
        }
        let cutThrough = try meta("versions_cut_through") ?? 0
        var packs: Set<Int64> = completing.map { [$0] } ?? []
        for row in try query("""
            SELECT DISTINCT p.region_id FROM (
              SELECT rr.region_id FROM packd_resource_changes c JOIN region_resources rr ON rr.resource_id = c.resource_id
              WHERE c.change > $1
              UNION SELECT rt.region_id FROM packd_tile_changes c JOIN region_tiles rt ON rt.tile_id = c.tile_id
              WHERE c.change > $1) changed
            JOIN packd_packs p ON p.region_id = changed.region_id
            WHERE p.state = $2 AND p.version > 0
            """, [.int8(cutThrough), .text(PackState.complete.rawValue)]) {
            packs.insert(try row.int64(0))
        }
        var cut: [PackVersion] = []
        for packID in packs.sorted() {
            if let version = try cutVersion(packID, boundary: boundary, now: now) { cut.append(version) }
        }
        try setMeta("versions_cut_through", boundary)
        return cut
    }

    private func cutVersion(_ packID: Int64, boundary: Int64, now: Int64) throws -> PackVersion? {
        guard let pack = try query("""
            SELECT p.version, p.name, r.description FROM packd_packs p JOIN regions r ON r.id = p.region_id
            WHERE p.region_id = $1
            """, [.int8(packID)]).first else { return nil }
        let (current, name, description) = (try pack.int64(0), try pack.string(1), try pack.bytesOrNil(2))
        let totals = try progress(packID) ?? StoredProgress()
        let previous = try version(current, of: packID)
        var changed = (rows: Int64(0), bytes: Int64(0), removed: Int64(0))
        if let previous {
            let row = try query("""
                SELECT count(*) FILTER (WHERE data IS NOT NULL)::int8, coalesce(sum(octet_length(data)), 0)::int8,
                       count(*) FILTER (WHERE data IS NULL)::int8
                FROM (SELECT r.data FROM packd_resource_changes c JOIN region_resources rr ON rr.resource_id = c.resource_id
                      JOIN resources r ON r.id = c.resource_id WHERE c.change > $2 AND rr.region_id = $1
                      UNION ALL
                      SELECT t.data FROM packd_tile_changes c JOIN region_tiles rt ON rt.tile_id = c.tile_id
                      JOIN tiles t ON t.id = c.tile_id WHERE c.change > $2 AND rt.region_id = $1) changed
                """, [.int8(packID), .int8(previous.changeBoundary)]).first
            changed = (try row?.int64(0) ?? 0, try row?.int64(1) ?? 0, try row?.int64(2) ?? 0)
            guard changed.rows + changed.removed > 0 else { return nil }
        } else {
            let empty = try scalar("""
                SELECT ((SELECT count(*) FROM region_resources rr JOIN resources r ON r.id = rr.resource_id
                         WHERE rr.region_id = $1 AND r.data IS NULL)
                      + (SELECT count(*) FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
                         WHERE rt.region_id = $1 AND t.data IS NULL))::int8
                """, [.int8(packID)]) ?? 0
            changed = (totals.completedResources - empty, totals.completedBytes, 0)
        }
        let version = PackVersion(
            packID: packID, version: current + 1, createdAt: max(now, (previous?.createdAt ?? now - 1) + 1),
            changeBoundary: boundary, resources: totals.completedResources, tiles: totals.completedTiles,
            bytes: totals.completedBytes, changedResources: changed.rows, changedBytes: changed.bytes,
            removedResources: changed.removed, name: name, regionDescription: previous?.regionDescription ?? description)
        try query("""
            INSERT INTO packd_versions (\(Self.versionColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """, [.int8(packID), .int8(version.version), .int8(version.createdAt), .int8(boundary), .int8(version.resources),
                  .int8(version.tiles), .int8(version.bytes), .int8(version.changedResources), .int8(version.changedBytes),
                  .int8(version.removedResources), .text(version.name), PostgresValue(version.regionDescription)])
        try query("UPDATE packd_packs SET version = $2 WHERE region_id = $1", [.int8(packID), .int8(version.version)])
        try query("DELETE FROM packd_versions WHERE pack_id = $1 AND version <= $2",
                  [.int8(packID), .int8(version.version - Int64(keepVersions))])
        return version
    }
}

/// Scheduled refreshes, as `OfflineDatabase+Refresh`. A claim locks the pack's row and moves its
/// due time only if it is still the one read: two nodes claiming the same refresh, one wins.
extension PostgresStoreConnection {
    public func dueRefreshes(now: Int64, limit: Int) throws -> [DueRefresh] {
        try query("""
            SELECT region_id, refresh_every, next_refresh_at FROM packd_packs
            WHERE next_refresh_at IS NOT NULL AND next_refresh_at <= $1 AND refresh_every IS NOT NULL
            ORDER BY next_refresh_at, region_id LIMIT $2
            """, [.int8(now), .int8(Int64(max(0, limit)))]).map { row in
            DueRefresh(packID: try row.int64(0), every: try row.string(1), due: try row.int64(2))
        }
    }

    public func earliestRefresh() throws -> Int64? {
        try scalar("SELECT min(next_refresh_at) FROM packd_packs WHERE next_refresh_at IS NOT NULL")
    }

    @discardableResult
    public func setRefresh(_ packID: Int64, every: String?, next: Int64?, now: Int64) throws -> Bool {
        try scalar("""
            UPDATE packd_packs SET refresh_every = $2, next_refresh_at = $3, updated_at = $4 WHERE region_id = $1 RETURNING 1::int8
            """, [.int8(packID), PostgresValue(every), PostgresValue(next), .int8(now)]) != nil
    }

    public func claimRefresh(_ packID: Int64, due: Int64, next: Int64, now: Int64) throws -> TransitionOutcome? {
        try transaction { () throws -> TransitionOutcome? in
            guard try lockedState(packID) != nil,
                  try scalar("""
                      UPDATE packd_packs SET next_refresh_at = $3 WHERE region_id = $1 AND next_refresh_at = $2 RETURNING 1::int8
                      """, [.int8(packID), .int8(due), .int8(next)]) != nil else { return nil }
            return try transition(packID, .invalidate, now: now)
        }
    }
}
