import CSQLite
import Packs

/// What merging a validated upload is about to change, counted with the merge's own rules
/// (`MergeStatements`: a row is taken when it is new, or newer by `modified`) just before the
/// merge on the same writer connection, so nothing can commit in between: the import endpoint
/// reports resources and tiles inserted or replaced, and which existing packs the upload left as
/// they were. Untrusted content is attached as for the merge: read-only, defensive.
public struct ImportPreview: Equatable, Sendable {
    /// Distinct region-linked resources (not tiles) the merge inserts or replaces.
    public let resources: Int64
    /// Distinct region-linked tiles the merge inserts or replaces.
    public let tiles: Int64
    /// Existing packs (region ids) an upload region matches and brings nothing new or newer to.
    public let unchangedPacks: Set<Int64>
    /// Existing packs an upload region matches and brings something new or newer to.
    public let changedPacks: Set<Int64>
    /// Upload regions that match an existing pack and bring nothing new or newer.
    public let unchangedRegions: Int64

    public init(resources: Int64, tiles: Int64, unchangedPacks: Set<Int64>, changedPacks: Set<Int64>, unchangedRegions: Int64) {
        self.resources = resources
        self.tiles = tiles
        self.unchangedPacks = unchangedPacks
        self.changedPacks = changedPacks
        self.unchangedRegions = unchangedRegions
    }

    private static let newTiles = """
        FROM (SELECT DISTINCT st.* FROM up.region_tiles srt JOIN up.tiles st ON st.id = srt.tile_id) AS st
        LEFT JOIN main.tiles t ON t.url_template = st.url_template AND t.pixel_ratio = st.pixel_ratio
                               AND t.z = st.z AND t.x = st.x AND t.y = st.y
        WHERE t.id IS NULL OR st.modified > t.modified
        """
    private static let newResources = """
        FROM (SELECT DISTINCT sr.* FROM up.region_resources srr JOIN up.resources sr ON sr.id = srr.resource_id) AS sr
        LEFT JOIN main.resources r ON r.url = sr.url
        WHERE r.id IS NULL OR sr.modified > r.modified
        """
    /// Per upload region: the existing pack it matches (NULL when new), and whether any row it
    /// links is new or newer.
    private static let regions = """
        SELECT (SELECT min(r.id) FROM main.regions r WHERE r.definition = sr.definition AND r.description IS sr.description),
          EXISTS (SELECT 1 FROM up.region_tiles srt JOIN up.tiles st ON st.id = srt.tile_id
                  LEFT JOIN main.tiles t ON t.url_template = st.url_template AND t.pixel_ratio = st.pixel_ratio
                                         AND t.z = st.z AND t.x = st.x AND t.y = st.y
                  WHERE srt.region_id = sr.id AND (t.id IS NULL OR st.modified > t.modified))
          OR EXISTS (SELECT 1 FROM up.region_resources srr JOIN up.resources su ON su.id = srr.resource_id
                     LEFT JOIN main.resources r ON r.url = su.url
                     WHERE srr.region_id = sr.id AND (r.id IS NULL OR su.modified > r.modified))
        FROM up.regions sr
        """

    /// Counts on the writer's connection (`WriterThread.perform`), right before
    /// `importOfflineDatabase` in the same operation.
    public static func of(_ upload: ValidatedImport, in database: Database) throws(ImportError) -> ImportPreview {
        var preview = ImportPreview(resources: 0, tiles: 0, unchangedPacks: [], changedPacks: [], unchangedRegions: 0)
        try ValidatedImport.run(database) {
            try database.setConfig(SQLITE_DBCONFIG_DEFENSIVE, true)
            try database.execute("PRAGMA trusted_schema = OFF")
            try database.execute("ATTACH DATABASE ?1 AS up", [.text(ValidatedImport.readOnlyURI(upload.path))])
            defer { try? database.execute("DETACH DATABASE up") }
            try database.transaction(.deferred) {
                let tiles = try database.scalarInt("SELECT count(*) " + newTiles) ?? 0
                let resources = try database.scalarInt("SELECT count(*) " + newResources) ?? 0
                var unchanged: Set<Int64> = [], changed: Set<Int64> = [], unchangedRegions: Int64 = 0
                try database.makeStatement(regions).forEachRow { row in
                    guard let pack = row.optionalInt64(at: 0) else { return }
                    if row.int64(at: 1) != 0 {
                        changed.insert(pack)
                    } else {
                        unchanged.insert(pack)
                        unchangedRegions += 1
                    }
                }
                preview = ImportPreview(resources: resources, tiles: tiles, unchangedPacks: unchanged.subtracting(changed),
                                        changedPacks: changed, unchangedRegions: unchangedRegions)
            }
        }
        return preview
    }
}
