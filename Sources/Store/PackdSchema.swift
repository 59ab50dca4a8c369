import Packs

/// packd's own tables, beside MapLibre's (never inside them: a MapLibre client must see schema 6
/// untouched). Versioned separately in `packd_meta` so packd can migrate without touching
/// `user_version`, which belongs to MapLibre.
///
/// A pack *is* a MapLibre region: `packd_packs.region_id` is both the region id and the pack id,
/// so an export needs no id mapping and creation order is id order.
public enum PackdSchema {
    /// Each entry migrates from version `index` to `index + 1`; append, never edit.
    static let migrations: [String] = [
        // 0 → 1
        """
        CREATE TABLE packd_meta (
          key TEXT NOT NULL PRIMARY KEY,
          value
        );

        CREATE TABLE packd_packs (
          region_id INTEGER NOT NULL PRIMARY KEY REFERENCES regions(id) ON DELETE CASCADE,
          name TEXT NOT NULL,
          state TEXT NOT NULL,
          error TEXT,                          -- JSON {code, detail, url?, status?} when failed
          context BLOB,                        -- the client's opaque context
          created_at INTEGER NOT NULL,         -- Unix seconds
          updated_at INTEGER NOT NULL,
          completed_at INTEGER,
          limits TEXT,                         -- JSON, e.g. {"max_tiles": n}
          expected_resources INTEGER NOT NULL DEFAULT 0,
          expected_tiles INTEGER NOT NULL DEFAULT 0,
          expected_is_precise INTEGER NOT NULL DEFAULT 0,
          update_available INTEGER NOT NULL DEFAULT 0
        );

        CREATE INDEX packd_packs_state ON packd_packs (state);

        -- Derived from region_resources/region_tiles, maintained in the same transaction as the
        -- links so it is exact; StoredProgress.recount recomputes it for checks and repair.
        CREATE TABLE packd_progress (
          pack_id INTEGER NOT NULL PRIMARY KEY REFERENCES packd_packs(region_id) ON DELETE CASCADE,
          completed_resources INTEGER NOT NULL DEFAULT 0,
          completed_bytes INTEGER NOT NULL DEFAULT 0,
          completed_tiles INTEGER NOT NULL DEFAULT 0,
          completed_tile_bytes INTEGER NOT NULL DEFAULT 0,
          failed_resources INTEGER NOT NULL DEFAULT 0
        );

        -- AUTOINCREMENT: event ids never repeat, even after the newest rows are deleted, so
        -- Last-Event-ID stays meaningful across restarts. No FK: pack_removed outlives the pack.
        CREATE TABLE packd_events (
          id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
          pack_id INTEGER,
          type TEXT NOT NULL,
          data TEXT NOT NULL,
          created_at INTEGER NOT NULL
        );

        CREATE INDEX packd_events_pack ON packd_events (pack_id, id);

        CREATE TABLE packd_errors (
          id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
          pack_id INTEGER NOT NULL REFERENCES packd_packs(region_id) ON DELETE CASCADE,
          url TEXT NOT NULL,                   -- credentials removed
          status INTEGER,
          message TEXT NOT NULL,
          attempts INTEGER NOT NULL DEFAULT 1,
          at INTEGER NOT NULL
        );

        CREATE INDEX packd_errors_pack ON packd_errors (pack_id, id);

        CREATE TABLE packd_idempotency (
          key TEXT NOT NULL PRIMARY KEY,
          request_hash TEXT NOT NULL,
          pack_id INTEGER,
          status INTEGER NOT NULL,
          body BLOB,
          created_at INTEGER NOT NULL
        );

        -- Counters kept so the hot checks (global tile limit) are one row read.
        CREATE TABLE packd_totals (
          id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
          linked_tiles INTEGER NOT NULL DEFAULT 0
        );

        INSERT INTO packd_totals (id, linked_tiles) VALUES (1, 0);
        """,
        // 1 → 2: check-update and invalidate. `update_available` was NOT NULL, so "never checked"
        // is a NULL `update_checked_at`; the last revalidation of a pack is one row.
        """
        ALTER TABLE packd_packs ADD COLUMN update_checked_at INTEGER;

        CREATE TABLE packd_invalidations (
          pack_id INTEGER NOT NULL PRIMARY KEY REFERENCES packd_packs(region_id) ON DELETE CASCADE,
          unchanged INTEGER NOT NULL DEFAULT 0,
          updated INTEGER NOT NULL DEFAULT 0,
          removed INTEGER NOT NULL DEFAULT 0,
          started_at INTEGER NOT NULL,
          completed_at INTEGER                 -- NULL while revalidating
        );
        """,
        // Webhooks (issue 26): endpoints, the outbox of deliveries (one per message and
        // endpoint, written in the transaction of the change they announce) and their attempts.
        // Times are Unix milliseconds.
        """
        CREATE TABLE packd_webhook_endpoints (
          id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
          url TEXT NOT NULL,
          description TEXT NOT NULL DEFAULT '',
          events TEXT NOT NULL,                -- JSON array of event types, or ["*"]
          pack_ids TEXT,                       -- JSON array; NULL: every pack
          secret TEXT NOT NULL,                -- whsec_...: signs every attempt
          previous_secret TEXT,                -- signs beside it until previous_secret_expires_at
          previous_secret_expires_at INTEGER,
          enabled INTEGER NOT NULL DEFAULT 1,
          disabled_reason TEXT,
          failing_since INTEGER,               -- first failed attempt of an unbroken run
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL
        );

        -- One per event: what every endpoint it goes to is sent. No FK to the pack: a
        -- pack.removed message outlives its pack.
        CREATE TABLE packd_webhook_messages (
          id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
          message_id TEXT NOT NULL UNIQUE,     -- the webhook-id header
          type TEXT NOT NULL,
          pack_id INTEGER,
          data TEXT NOT NULL,
          created_at INTEGER NOT NULL
        );

        CREATE TABLE packd_webhook_deliveries (
          id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
          endpoint_id INTEGER NOT NULL REFERENCES packd_webhook_endpoints(id) ON DELETE CASCADE,
          message_id INTEGER NOT NULL REFERENCES packd_webhook_messages(id) ON DELETE CASCADE,
          state TEXT NOT NULL,                 -- pending, delivered, failed
          attempts INTEGER NOT NULL DEFAULT 0,
          next_attempt_at INTEGER,
          retry_until INTEGER,                 -- a manual retry's deadline, beyond the maximum age
          last_attempt_at INTEGER,
          last_status INTEGER,
          last_error TEXT,
          delivered_at INTEGER,
          lease_owner TEXT,                    -- the process attempting it, until lease_until
          lease_until INTEGER,
          created_at INTEGER NOT NULL
        );

        CREATE INDEX packd_webhook_deliveries_due ON packd_webhook_deliveries (endpoint_id, next_attempt_at, id)
          WHERE state = 'pending';
        CREATE INDEX packd_webhook_deliveries_pending ON packd_webhook_deliveries (created_at) WHERE state = 'pending';
        CREATE INDEX packd_webhook_deliveries_leased ON packd_webhook_deliveries (endpoint_id) WHERE lease_until IS NOT NULL;
        CREATE INDEX packd_webhook_deliveries_endpoint ON packd_webhook_deliveries (endpoint_id, id);
        CREATE INDEX packd_webhook_deliveries_message ON packd_webhook_deliveries (message_id);
        CREATE INDEX packd_webhook_deliveries_finished ON packd_webhook_deliveries (created_at) WHERE state != 'pending';

        CREATE TABLE packd_webhook_attempts (
          id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
          delivery_id INTEGER NOT NULL REFERENCES packd_webhook_deliveries(id) ON DELETE CASCADE,
          at INTEGER NOT NULL,
          duration_ms INTEGER NOT NULL,
          status INTEGER,
          error TEXT,
          response TEXT                        -- the first KiB of the answer
        );

        CREATE INDEX packd_webhook_attempts_delivery ON packd_webhook_attempts (delivery_id, id);
        """,
        // 3 → 4: pack versions (`PackVersion`). The change sequence numbers every change of a
        // stored row's content and every row linked to a pack that has a version; a row's last
        // number is kept beside MapLibre's tables (whose schema stays 6), and goes with the row.
        // Packs complete before this migration start at version 1, cut now.
        """
        ALTER TABLE packd_packs ADD COLUMN version INTEGER NOT NULL DEFAULT 0;

        CREATE TABLE packd_versions (
          pack_id INTEGER NOT NULL REFERENCES packd_packs(region_id) ON DELETE CASCADE,
          version INTEGER NOT NULL,
          created_at INTEGER NOT NULL,         -- Unix seconds, increasing along a pack's versions
          change_boundary INTEGER NOT NULL,    -- the change sequence when it was cut
          resources INTEGER NOT NULL,
          tiles INTEGER NOT NULL,
          bytes INTEGER NOT NULL,
          changed_resources INTEGER NOT NULL,
          changed_bytes INTEGER NOT NULL,
          removed_resources INTEGER NOT NULL,
          name TEXT NOT NULL,
          description BLOB,                    -- the region description exports carry
          PRIMARY KEY (pack_id, version)
        );

        CREATE TABLE packd_resource_changes (
          resource_id INTEGER NOT NULL PRIMARY KEY REFERENCES resources(id) ON DELETE CASCADE,
          change INTEGER NOT NULL
        );
        CREATE INDEX packd_resource_changes_change ON packd_resource_changes (change);

        CREATE TABLE packd_tile_changes (
          tile_id INTEGER NOT NULL PRIMARY KEY REFERENCES tiles(id) ON DELETE CASCADE,
          change INTEGER NOT NULL
        );
        CREATE INDEX packd_tile_changes_change ON packd_tile_changes (change);

        -- The sequence's last value, and how far every complete pack's versions account for it.
        INSERT INTO packd_meta (key, value) VALUES ('change_sequence', 1), ('versions_cut_through', 1);

        INSERT INTO packd_versions (pack_id, version, created_at, change_boundary, resources, tiles, bytes,
                                    changed_resources, changed_bytes, removed_resources, name, description)
        SELECT p.region_id, 1, coalesce(p.completed_at, p.updated_at), 1, g.completed_resources, g.completed_tiles,
               g.completed_bytes, g.completed_resources, g.completed_bytes, 0, p.name, r.description
        FROM packd_packs p JOIN packd_progress g ON g.pack_id = p.region_id JOIN regions r ON r.id = p.region_id
        WHERE p.state = '\(PackState.complete.rawValue)';
        UPDATE packd_packs SET version = 1 WHERE state = '\(PackState.complete.rawValue)';
        """,
        // 4 → 5: scheduled refresh (`"refresh": {"every": "P7D"}`): the interval as posted and
        // when it is next due, found through a partial index of the packs that have one.
        """
        ALTER TABLE packd_packs ADD COLUMN refresh_every TEXT;
        ALTER TABLE packd_packs ADD COLUMN next_refresh_at INTEGER;
        CREATE INDEX packd_packs_next_refresh ON packd_packs (next_refresh_at) WHERE next_refresh_at IS NOT NULL;
        """,
        // Lean packs: the start area posted with the pack, when its tiles were all stored, and the
        // glyph ranges a `"glyphs": "region"` pack left out (JSON).
        """
        ALTER TABLE packd_packs ADD COLUMN start_area TEXT;
        ALTER TABLE packd_packs ADD COLUMN start_area_ready_at INTEGER;
        ALTER TABLE packd_packs ADD COLUMN skipped_glyph_ranges TEXT;
        """,
        // PMTiles archive sources: the range requests a pack made and the bytes they brought.
        """
        ALTER TABLE packd_progress ADD COLUMN archive_requests INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE packd_progress ADD COLUMN archive_bytes INTEGER NOT NULL DEFAULT 0;
        """,
    ]

    /// The version a fully migrated database has.
    public static var currentVersion: Int64 { Int64(migrations.count) }
}
