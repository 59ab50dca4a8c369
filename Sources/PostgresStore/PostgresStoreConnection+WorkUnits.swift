import Packs
import Postgres
import WorkSharing

/// The work units of active packs as the writer changes them: a unit finished (and the pack with
/// its last one), the units of a pack that stopped being active forgotten.
extension PostgresStoreConnection {
    /// Marks `key` done if `node` still holds it; when it was the pack's last unit, finishes the
    /// pack (`PackLifecycle`'s `finished`, with the failures its units recorded), all in one
    /// transaction. The pack's row is locked first, so two nodes finishing its last two units
    /// take turns and the second sees the first's. nil: the pack is not active, or units remain.
    public func completeUnit(_ key: WorkUnitLeases.Key, node: Int64, now: Int64) throws -> TransitionOutcome? {
        try transaction {
            guard try lockedState(key.pack) == .active else { return nil }
            _ = try WorkUnitLeases(node: node).complete(key, on: connection)
            let remaining = try scalar("""
                SELECT count(*)::int8 FROM packd_work_units WHERE pack_id = $1 AND state <> $2
                """, [.int8(key.pack), .text(WorkUnitState.done.rawValue)]) ?? 0
            guard remaining == 0, try scalar("SELECT work_unit_tiles::int8 FROM packd_packs WHERE region_id = $1",
                                             [.int8(key.pack)]) != nil else { return nil }
            let failed = try progress(key.pack)?.failedResources ?? 0
            return try transition(key.pack, .finished(failedResources: failed), now: now)
        }
    }

    /// Stores `cut` as the pack's units unless it has some (see `WorkUnitLeases.store`); false
    /// when the pack is no longer active (nothing stored).
    public func storeCut(_ cut: WorkUnitCut, pack: Int64) throws -> Bool {
        try transaction {
            guard try lockedState(pack) == .active else { return false }
            try WorkUnitLeases.store(cut, pack: pack, on: connection)
            return true
        }
    }

    func forgetWorkUnits(_ packID: Int64) throws {
        try query("DELETE FROM packd_work_units WHERE pack_id = $1", [.int8(packID)])
        try query("UPDATE packd_packs SET work_unit_tiles = NULL WHERE region_id = $1", [.int8(packID)])
    }
}
