import Packs
import Postgres

/// Which version of each PMTiles archive a cluster pack's units read (`packd_archive_versions`):
/// agreed on by every unit before it stores a tile, and checked when a unit completes, so a pack
/// read by several nodes while its archive is replaced ends with the new archive's tiles only.
extension PostgresStoreConnection {
    /// Records `versions` (archive key → version) as the pack's unless it holds others. A version
    /// in `replacing` (one the unit saw replaced) gives way: the record moves to the unit's and
    /// every unit done with the old one is pending again (its tiles are read again: the old
    /// version's no longer count as stored). Returns nil when the record now holds `versions`,
    /// else the versions it holds instead. One transaction, the pack's row locked.
    public func agreeOnArchives(pack: Int64, versions: [String: String], replacing: [String: String]) throws -> [String: String]? {
        try transaction {
            guard try lockedState(pack) == .active else { return nil }
            let recorded = try recordedArchives(pack: pack)
            let others = recorded.filter { archive, old in
                versions[archive].map { $0 != old && replacing[archive] != old } ?? false
            }
            guard others.isEmpty else { return others }
            var moved = false
            for (archive, version) in versions.sorted(by: { $0.key < $1.key }) where recorded[archive] != version {
                moved = moved || recorded[archive] != nil
                try query("""
                    INSERT INTO packd_archive_versions (pack_id, archive, version) VALUES ($1, $2, $3)
                    ON CONFLICT (pack_id, archive) DO UPDATE SET version = EXCLUDED.version
                    """, [.int8(pack), .text(archive), .text(version)])
            }
            if moved {
                try query("""
                    UPDATE packd_work_units SET state = '\(WorkUnitState.pending.rawValue)', lease_owner = NULL,
                      lease_expires_at = NULL, stored_tiles = 0
                    WHERE pack_id = $1 AND state = '\(WorkUnitState.done.rawValue)' AND kind <> 3
                    """, [.int8(pack)])
            }
            return nil
        }
    }

    private func recordedArchives(pack: Int64) throws -> [String: String] {
        var recorded: [String: String] = [:]
        for row in try query("SELECT archive, version FROM packd_archive_versions WHERE pack_id = $1", [.int8(pack)]) {
            recorded[try row.string(0)] = try row.string(1)
        }
        return recorded
    }

    /// Whether the pack's record still holds `versions` (a unit read them; completing, it must
    /// have read the pack's current ones).
    func archivesStillAgreed(pack: Int64, versions: [String: String]) throws -> Bool {
        let recorded = try recordedArchives(pack: pack)
        return versions.allSatisfy { recorded[$0.key] == $0.value }
    }

    /// Forgets the pack's record: a new cut is a new download, which agrees afresh.
    func forgetArchiveVersions(_ pack: Int64) throws {
        try query("DELETE FROM packd_archive_versions WHERE pack_id = $1", [.int8(pack)])
    }
}
