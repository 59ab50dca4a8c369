/// How cluster mode learns which packs each commit changed: the triggers noting them in the
/// writer's session, and the channel announcing them to the other nodes.
extension PostgresSchema {
    /// Which packs' documents a session's transactions changed, as PostgreSQL itself reports it,
    /// for the writer's per-pack change marks (`PostgresWriterBackend`; SQLite's update hook does
    /// this in SQLite mode). In a session that set `packd.note_changed_packs` to `on` (the
    /// writer's), a row trigger on each table a pack document is read from (`PackRecord.selectSQL`,
    /// the progress query) notes the pack id of every row inserted, updated or deleted —
    /// foreign-key cascades included — in the session setting `packd.changed_packs` (distinct ids,
    /// comma-separated; `*`, any pack, once the list passes 7000 bytes, so it stays small and fits
    /// a notification). `packd_take_changed_packs` returns and clears it, and tells the other nodes
    /// (`CommitChannel`, payload `node:ids`) when there are any, or when asked to. Settings are
    /// transactional: a rolled-back transaction or savepoint takes its notes with it. Row triggers
    /// with no query in them: a download's batch fires one per pack whose progress it adds to.
    static let changedPacksMigration = """
        CREATE FUNCTION packd_note_changed_pack() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          noted text;
          id text;
        BEGIN
          IF coalesce(current_setting('packd.note_changed_packs', true), '') <> 'on' THEN
            RETURN NULL;
          END IF;
          noted := coalesce(current_setting('packd.changed_packs', true), '');
          id := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END) ->> TG_ARGV[0];
          IF noted = '*' OR position(',' || id || ',' IN ',' || noted || ',') > 0 THEN
            RETURN NULL;
          END IF;
          noted := CASE WHEN noted = '' THEN id ELSE noted || ',' || id END;
          PERFORM set_config('packd.changed_packs', CASE WHEN length(noted) > 7000 THEN '*' ELSE noted END, false);
          RETURN NULL;
        END;
        $$;

        -- The ids noted since the last call ('' for none, '*' for any), cleared; announced on the
        -- channel as 'node:ids' (in the caller's transaction) when there are any, or always.
        CREATE FUNCTION packd_take_changed_packs(channel text, node bigint, always boolean) RETURNS text
        LANGUAGE plpgsql AS $$
        DECLARE
          ids text := coalesce(current_setting('packd.changed_packs', true), '');
        BEGIN
          PERFORM set_config('packd.changed_packs', '', false);
          IF always OR ids <> '' THEN
            PERFORM pg_notify(channel, node::text || ':' || ids);
          END IF;
          RETURN ids;
        END;
        $$;
        CREATE TRIGGER packd_packs_changed_packs AFTER INSERT OR UPDATE OR DELETE ON packd_packs
          FOR EACH ROW EXECUTE FUNCTION packd_note_changed_pack('region_id');
        CREATE TRIGGER regions_changed_packs AFTER INSERT OR UPDATE OR DELETE ON regions
          FOR EACH ROW EXECUTE FUNCTION packd_note_changed_pack('id');
        CREATE TRIGGER packd_progress_changed_packs AFTER INSERT OR UPDATE OR DELETE ON packd_progress
          FOR EACH ROW EXECUTE FUNCTION packd_note_changed_pack('pack_id');
        CREATE TRIGGER packd_invalidations_changed_packs AFTER INSERT OR UPDATE OR DELETE ON packd_invalidations
          FOR EACH ROW EXECUTE FUNCTION packd_note_changed_pack('pack_id');
        """
}

/// The channel every commit of a node's writer that changed packs notifies (payload `node:ids`,
/// the node's id and the packs whose documents changed, comma-separated, or `*` for any; see
/// `PostgresSchema.changedPacksMigration`), so every node's cache of rendered packs learns which
/// packs another node changed.
public enum CommitChannel {
    public static let name = "packd_commits"

    /// A notification's payload: the node that committed, and the packs it changed (nil: any
    /// pack, for a payload without a readable list).
    public static func parse(_ payload: String) -> (node: Int64?, packs: Set<Int64>?) {
        guard let colon = payload.firstIndex(of: ":") else { return (Int64(payload), nil) }
        return (Int64(payload[..<colon]), packs(in: payload[payload.index(after: colon)...]))
    }

    /// Comma-separated pack ids; nil (any pack) for `*`, or when one is not an id.
    static func packs(in list: some StringProtocol) -> Set<Int64>? {
        var packs: Set<Int64> = []
        for id in list.split(separator: ",") {
            guard let id = Int64(id) else { return nil }
            packs.insert(id)
        }
        return packs
    }
}
