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
    /// `archives`: the versions of the pack's PMTiles archives the unit read (see
    /// `agreeOnArchives`); when the pack's record holds others by now, the unit is not done but
    /// pending again, to be read from the archive the record names.
    public func completeUnit(_ key: WorkUnitLeases.Key, node: Int64, now: Int64, archives: [String: String] = [:]) throws
        -> TransitionOutcome? {
        try transaction {
            guard try lockedState(key.pack) == .active else { return nil }
            guard try archivesStillAgreed(pack: key.pack, versions: archives) else {
                try query("""
                    UPDATE packd_work_units SET state = '\(WorkUnitState.pending.rawValue)', lease_owner = NULL, lease_expires_at = NULL
                    WHERE pack_id = $1 AND ordinal = $2 AND lease_owner = $3
                    """, [.int8(key.pack), .int8(Int64(key.ordinal)), .int8(node)])
                return nil
            }
            _ = try WorkUnitLeases(node: node).complete(key, on: connection)
            return try finishIfNoUnitRemains(key.pack, now: now)
        }
    }

    /// What a glyph choice committed: whether it was still this node's to make, and the pack's
    /// transition when it needed no range (the choice was its last unit).
    public struct GlyphChoiceOutcome: Sendable {
        public let chosen: Bool
        public let finished: TransitionOutcome?
    }

    /// Completes `key`, a `"glyphs": "region"` pack's glyph-choice unit, if `node` still holds it:
    /// the needed ranges become pending units of fixed resources (`ranges`: positions, see
    /// `WorkUnit.Scope.glyphChoice`), the ranges left out and the exact counts are recorded, and
    /// when no range is needed the pack finishes (as `completeUnit`) — one transaction, so a node
    /// dying meanwhile leaves the choice to be made again, never half recorded.
    public func completeGlyphChoice(_ key: WorkUnitLeases.Key, node: Int64, ranges: [ClosedRange<Int>], counts: ExpectedCounts,
                                    maxTiles: Int64?, skipped: SkippedGlyphRanges, now: Int64) throws -> GlyphChoiceOutcome {
        try transaction {
            guard try lockedState(key.pack) == .active, try WorkUnitLeases(node: node).complete(key, on: connection) else {
                return GlyphChoiceOutcome(chosen: false, finished: nil)
            }
            try WorkUnitLeases.add(ranges.map { WorkUnit.Scope.fixed($0) }, pack: key.pack, on: connection)
            try recordSkippedGlyphRanges(key.pack, skipped, now: now)
            _ = try transition(key.pack, .planKnown(counts, maxTiles: maxTiles), now: now)
            return GlyphChoiceOutcome(chosen: true, finished: try finishIfNoUnitRemains(key.pack, now: now))
        }
    }

    /// The pack's last unit is done: it finishes (`PackLifecycle`'s `finished`, with the failures
    /// its units recorded). nil while units remain, or for a pack not cut.
    private func finishIfNoUnitRemains(_ pack: Int64, now: Int64) throws -> TransitionOutcome? {
        let remaining = try scalar("""
            SELECT count(*)::int8 FROM packd_work_units WHERE pack_id = $1 AND state <> $2
            """, [.int8(pack), .text(WorkUnitState.done.rawValue)]) ?? 0
        guard remaining == 0, try scalar("SELECT work_unit_tiles::int8 FROM packd_packs WHERE region_id = $1",
                                         [.int8(pack)]) != nil else { return nil }
        let failed = try progress(pack)?.failedResources ?? 0
        return try transition(pack, .finished(failedResources: failed), now: now)
    }

    /// Stores `cut` as the pack's units unless it has some (see `WorkUnitLeases.store`); false
    /// when the pack is no longer active (nothing stored).
    public func storeCut(_ cut: WorkUnitCut, pack: Int64) throws -> Bool {
        try transaction {
            guard try lockedState(pack) == .active else { return false }
            if try WorkUnitLeases.store(cut, pack: pack, on: connection) > 0 { try forgetArchiveVersions(pack) }
            return true
        }
    }

    /// Records that `pack`'s start area is whole (once, as `recordStartAreaReady`) when none of
    /// its units of tiles within `near`'s radius is left undone — whole zooms count as at the
    /// centre; each unit ended only once what it wrote was committed. False: units near remain,
    /// the pack is not cut, or it was recorded before. Cluster mode's readiness is per unit, a
    /// sufficient condition (a unit reaching just inside the radius holds tiles beyond it too).
    public func recordStartAreaReadyIfNearUnitsDone(_ pack: Int64, near: StartAreaClaimOrder, now: Int64) throws -> Bool {
        try query("""
            UPDATE packd_packs SET start_area_ready_at = $2, updated_at = $2
            WHERE region_id = $1 AND start_area_ready_at IS NULL AND work_unit_tiles IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM packd_work_units WHERE pack_id = $1 AND kind IN (1, 2) AND state <> $3
                                AND \(WorkUnitLeases.distance(x: "$4", y: "$5", metresPerUnit: "$6")) <= $7)
            RETURNING region_id
            """, [.int8(pack), .int8(now), .text(WorkUnitState.done.rawValue), .float8(near.centerX), .float8(near.centerY),
                  .float8(near.metresPerUnit), .float8(near.radiusMetres)]).first != nil
    }

    func forgetWorkUnits(_ packID: Int64) throws {
        try query("DELETE FROM packd_work_units WHERE pack_id = $1", [.int8(packID)])
        try forgetArchiveVersions(packID)
        try query("UPDATE packd_packs SET work_unit_tiles = NULL WHERE region_id = $1", [.int8(packID)])
    }
}
