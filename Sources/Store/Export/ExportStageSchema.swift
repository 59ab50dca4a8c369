/// The packd tables an export reads beside MapLibre's (the pack's version, its version rows and
/// its rows' change numbers), for a file that is not packd's own database: a cluster node stages
/// a pack from PostgreSQL into a file with `OfflineSchema.ddl` and these, and the exporters read
/// it exactly as they read packd's SQLite file (`PackdSchema` has the same tables and columns).
public enum ExportStageSchema {
    public static let ddl = """
        CREATE TABLE packd_packs (
          region_id INTEGER NOT NULL PRIMARY KEY,
          name TEXT NOT NULL,
          version INTEGER NOT NULL,
          updated_at INTEGER NOT NULL
        );
        CREATE TABLE packd_versions (
          pack_id INTEGER NOT NULL,
          version INTEGER NOT NULL,
          created_at INTEGER NOT NULL,
          change_boundary INTEGER NOT NULL,
          resources INTEGER NOT NULL,
          tiles INTEGER NOT NULL,
          bytes INTEGER NOT NULL,
          changed_resources INTEGER NOT NULL,
          changed_bytes INTEGER NOT NULL,
          removed_resources INTEGER NOT NULL,
          name TEXT NOT NULL,
          description BLOB,
          PRIMARY KEY (pack_id, version)
        );
        CREATE TABLE packd_resource_changes (resource_id INTEGER NOT NULL PRIMARY KEY, change INTEGER NOT NULL);
        CREATE INDEX packd_resource_changes_change ON packd_resource_changes (change);
        CREATE TABLE packd_tile_changes (tile_id INTEGER NOT NULL PRIMARY KEY, change INTEGER NOT NULL);
        CREATE INDEX packd_tile_changes_change ON packd_tile_changes (change);
        """

    /// `packd_versions`' columns, in the order `ddl` and `PackdSchema` declare them.
    public static let versionColumns = VersionQueries.columns
}
