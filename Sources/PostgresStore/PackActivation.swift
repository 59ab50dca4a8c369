import Postgres

/// `--max-active-packs` for the whole cluster: packs leave the queue for active only under a
/// transaction-level advisory lock, so two nodes activating at once cannot both see a free slot
/// and overshoot the limit. The states are given by the caller (the domain module owns their
/// names); the caller's lifecycle has already decided that queued → active is the transition.
public enum PackActivation {
    /// Moves the oldest packs in state `queued` to `active` while fewer than `limit` packs are
    /// in `active`, in one transaction; returns the ids activated (in id order).
    public static func activate(limit: Int, queued: String, active: String, now: Int64,
                                on connection: PostgresConnection) throws -> [Int64] {
        try connection.transaction {
            try connection.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                                 [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.activation.rawValue))])
            let rows = try connection.query("""
                UPDATE packd_packs SET state = $2, updated_at = $4
                WHERE region_id IN (
                  SELECT region_id FROM packd_packs WHERE state = $1 ORDER BY region_id
                  LIMIT greatest(0, $3 - (SELECT count(*) FROM packd_packs WHERE state = $2)))
                RETURNING region_id
                """, [.text(queued), .text(active), .int8(Int64(limit)), .int8(now)])
            return try rows.map { try $0.int64(0) }.sorted()
        }
    }
}
