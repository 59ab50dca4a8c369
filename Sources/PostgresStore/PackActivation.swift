import Packs
import Postgres

/// `--max-active-packs` for the whole cluster: packs leave the queue only under a
/// transaction-level advisory lock, so two nodes activating at once cannot both see a free slot
/// and overshoot the limit. What a start does to a queued pack is `PackLifecycle`'s to say.
public enum PackActivation {
    /// Starts the oldest queued packs while fewer than `limit` packs are active cluster-wide, in
    /// one transaction; returns the ids started (in id order).
    public static func activate(limit: Int, now: Int64, on connection: PostgresConnection) throws -> [Int64] {
        guard case .success(let start) = PackLifecycle.transition(from: .queued, on: .start), let started = start.to else {
            return []
        }
        return try connection.transaction {
            try connection.query("SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
                                 [.int8(Int64(AdvisoryLock.namespace)), .int8(Int64(AdvisoryLock.activation.rawValue))])
            let rows = try connection.query("""
                UPDATE packd_packs SET state = $2, updated_at = $4
                WHERE region_id IN (
                  SELECT region_id FROM packd_packs WHERE state = $1 ORDER BY region_id
                  LIMIT greatest(0, $3 - (SELECT count(*) FROM packd_packs WHERE state = $5)))
                RETURNING region_id
                """, [.text(PackState.queued.rawValue), .text(started.rawValue), .int8(Int64(limit)), .int8(now),
                      .text(PackState.active.rawValue)])
            let started = try rows.map { try $0.int64(0) }.sorted()
            // This run retries every missing resource: failures an earlier run recorded no longer
            // hold (a resumed pack's were cleared by `resume` already).
            try connection.query("DELETE FROM packd_errors WHERE pack_id = ANY($1)", [.int8Array(started)])
            try connection.query("UPDATE packd_progress SET failed_resources = 0 WHERE pack_id = ANY($1)", [.int8Array(started)])
            if !started.isEmpty {
                // Changed outside any node's writer: every node, this one too, hears which packs
                // (a payload without a node, which no node takes for its own; `*` past 8000 bytes).
                try connection.query("""
                    SELECT pg_notify($1, ':' || CASE WHEN length(ids) > 7000 THEN '*' ELSE ids END)
                    FROM array_to_string($2::int8[], ',') AS ids
                    """, [.text(CommitChannel.name), .int8Array(started)])
            }
            return started
        }
    }
}
