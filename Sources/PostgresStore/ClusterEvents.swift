import Postgres

/// Pack events in the cluster database: appended through `packd_append_events` (ids in commit
/// order, one `NOTIFY` on `EventChannel.name` per append), read back by id for SSE replay
/// (`Last-Event-ID`) on any node.
public enum ClusterEvents {
    public struct Event: Hashable, Sendable {
        public let id: Int64
        public let pack: Int64?
        public let type: String
        public let data: String
        public let createdAt: Int64
    }

    /// Appends `events` (pack, type, JSON data); their ids, ascending. Call last in the
    /// transaction that caused them: from here to its commit, other appends wait.
    public static func append(_ events: [(pack: Int64?, type: String, data: String)], at time: Int64,
                              on connection: PostgresConnection) throws -> [Int64] {
        guard !events.isEmpty else { return [] }
        let rows = try connection.query("SELECT packd_append_events($1, $2, $3, $4)", [
            .int8Array(events.map(\.pack)), .textArray(events.map(\.type)), .textArray(events.map(\.data)), .int8(time),
        ])
        return try rows.map { try $0.int64(0) }
    }

    /// Events after `id` (all packs, or one), oldest first, at most `limit`.
    public static func events(after id: Int64, pack: Int64? = nil, limit: Int,
                              on connection: PostgresConnection) throws -> [Event] {
        let rows = try connection.query("""
            SELECT id, pack_id, type, data, created_at FROM packd_events
            WHERE id > $1 AND ($2::int8 IS NULL OR pack_id = $2) ORDER BY id LIMIT $3
            """, [.int8(id), pack.map { .int8($0) } ?? .null, .int8(Int64(max(0, limit)))])
        return try rows.map { row in
            Event(id: try row.int64(0), pack: try row.int64OrNil(1), type: try row.string(2), data: try row.string(3),
                  createdAt: try row.int64(4))
        }
    }
}
