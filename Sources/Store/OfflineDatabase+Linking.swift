import Foundation
import Packs

/// Linking rows already stored — by another pack, or in the ambient cache — to a pack instead of
/// downloading them again (MapLibre's `markUsed` for rows a region did not fetch itself). Each
/// call is one transaction of set-based statements over a band of tiles or a list of URLs: the
/// rows are found and linked by SQL, never looked up one by one, and the pack's progress, the
/// global tile count and the ambient size change exactly as if the rows had been written.
extension OfflineDatabase {
    /// Links to `packID` the tiles of one source and zoom inside `spans` (`[y, x0, x1]` runs)
    /// that are stored, fresh at `now` (no `expires`, or a later one) and not linked to it yet.
    /// Under a global tile limit, tiles no pack links yet are left out once they would exceed it
    /// (the download then fetches them and the writer reports `tile_limit_exceeded`). Returns
    /// the coordinates linked, in a bitmap over `xRange` × `yRange`.
    public func linkFreshTiles(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                               spans: [[Int64]], xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>,
                               now: Int64) throws -> Linked<TileBitmap> {
        var linked = try TileBitmap(xRange: xRange, yRange: yRange)
        guard !spans.isEmpty else { return Linked(rows: linked, progress: nil) }
        let spansJSON = String(decoding: try JSONSerialization.data(withJSONObject: spans), as: UTF8.self)
        let arguments: [DatabaseValue] = [.text(spansJSON), .text(urlTemplate), .integer(pixelRatio), .integer(z),
                                          .integer(now), .integer(packID)]
        let ambientBefore = ambientCacheSize
        do {
            return try database.transaction { () throws -> Linked<TileBitmap> in
                guard try isPack(packID) else { return Linked(rows: linked, progress: nil) }
                var candidates: [(x: Int64, y: Int64, size: Int64, keySize: Int64, elsewhere: Bool)] = []
                try database.cachedStatement("""
                    SELECT t.x, t.y, IFNULL(LENGTH(t.data), 0), LENGTH(CAST(t.url_template AS BLOB)),
                      EXISTS (SELECT 1 FROM region_tiles o WHERE o.tile_id = t.id)
                    """ + Self.freshUnlinkedTiles).forEachRow(arguments) {
                    candidates.append(($0.int64(at: 0), $0.int64(at: 1), $0.int64(at: 2), $0.int64(at: 3), $0.int64(at: 4) != 0))
                }
                let newAnywhere = Int64(candidates.count(where: { !$0.elsewhere }))
                let linkedTiles = try database.scalarInt("SELECT linked_tiles FROM packd_totals WHERE id = 1") ?? 0
                let withinLimit = linkedTileLimit.map { linkedTiles + newAnywhere <= $0 } ?? true
                if !withinLimit { candidates.removeAll { !$0.elsewhere } }
                guard !candidates.isEmpty else { return Linked(rows: linked, progress: try progress(packID)) }
                try database.cachedStatement("INSERT INTO region_tiles (region_id, tile_id) SELECT ?6, t.id"
                    + Self.freshUnlinkedTiles
                    + (withinLimit ? "" : " AND EXISTS (SELECT 1 FROM region_tiles o WHERE o.tile_id = t.id)"))
                    .execute(arguments)
                var delta = StoredProgress()
                var claimed: Int64 = 0
                for tile in candidates {
                    linked.insert(x: tile.x, y: tile.y)
                    delta.add(row: StoredRow(id: 0, size: tile.size, sizeDelta: 0, keySize: tile.keySize, isNew: false), isTile: true)
                    if !tile.elsewhere { claimed += tile.size + tile.keySize }
                }
                try addLinked(delta, packID: packID)
                let newlyLinked = withinLimit ? newAnywhere : 0
                if newlyLinked != 0 {
                    try database.execute("UPDATE packd_totals SET linked_tiles = linked_tiles + ?1 WHERE id = 1",
                                         [.integer(newlyLinked)])
                }
                ambientCacheSize -= claimed
                return Linked(rows: linked, progress: try progress(packID))
            }
        } catch {
            ambientCacheSize = ambientBefore
            throw error
        }
    }

    /// Links to `packID` the non-tile resources among `urls` that are stored, fresh at `now`
    /// and not linked to it yet; returns the URLs linked.
    public func linkFreshResources(packID: Int64, urls: [String], now: Int64) throws -> Linked<Set<String>> {
        guard !urls.isEmpty else { return Linked(rows: [], progress: nil) }
        let urlsJSON = String(decoding: try JSONSerialization.data(withJSONObject: urls), as: UTF8.self)
        let arguments: [DatabaseValue] = [.text(urlsJSON), .integer(now), .integer(packID)]
        let ambientBefore = ambientCacheSize
        do {
            return try database.transaction { () throws -> Linked<Set<String>> in
                guard try isPack(packID) else { return Linked(rows: [], progress: nil) }
                var linked: Set<String> = []
                var delta = StoredProgress()
                var claimed: Int64 = 0
                try database.cachedStatement("""
                    SELECT r.url, IFNULL(LENGTH(r.data), 0), LENGTH(CAST(r.url AS BLOB)),
                      EXISTS (SELECT 1 FROM region_resources o WHERE o.resource_id = r.id)
                    """ + Self.freshUnlinkedResources).forEachRow(arguments) {
                    linked.insert($0.string(at: 0) ?? "")
                    let (size, keySize) = ($0.int64(at: 1), $0.int64(at: 2))
                    delta.add(row: StoredRow(id: 0, size: size, sizeDelta: 0, keySize: keySize, isNew: false), isTile: false)
                    if $0.int64(at: 3) == 0 { claimed += size + keySize }
                }
                guard !linked.isEmpty else { return Linked(rows: [], progress: try progress(packID)) }
                try database.cachedStatement("INSERT INTO region_resources (region_id, resource_id) SELECT ?3, r.id"
                    + Self.freshUnlinkedResources).execute(arguments)
                try addLinked(delta, packID: packID)
                ambientCacheSize -= claimed
                return Linked(rows: linked, progress: try progress(packID))
            }
        } catch {
            ambientCacheSize = ambientBefore
            throw error
        }
    }

    /// Tiles of ?2/?3/?4 in the `[y, x0, x1]` runs of ?1, fresh at ?5, not linked to pack ?6.
    /// Driven by the spans (a handful of rows), each an index range on the `tiles` UNIQUE index.
    static let freshUnlinkedTiles = """
         FROM json_each(?1) AS s
        JOIN tiles t ON t.url_template = ?2 AND t.pixel_ratio = ?3 AND t.z = ?4
          AND t.x BETWEEN json_extract(s.value, '$[1]') AND json_extract(s.value, '$[2]')
          AND t.y = json_extract(s.value, '$[0]')
        WHERE (t.expires IS NULL OR t.expires > ?5)
          AND NOT EXISTS (SELECT 1 FROM region_tiles h WHERE h.region_id = ?6 AND h.tile_id = t.id)
        """

    /// Resources whose URL is in the JSON array ?1, fresh at ?2, not linked to pack ?3.
    static let freshUnlinkedResources = """
         FROM resources r WHERE r.url IN (SELECT value FROM json_each(?1))
          AND (r.expires IS NULL OR r.expires > ?2)
          AND NOT EXISTS (SELECT 1 FROM region_resources h WHERE h.region_id = ?3 AND h.resource_id = r.id)
        """

    private func isPack(_ packID: Int64) throws -> Bool {
        try database.scalarInt("SELECT count(*) FROM packd_packs WHERE region_id = ?1", [.integer(packID)]) ?? 0 > 0
    }

    /// Adds linked rows to the pack's maintained progress.
    func addLinked(_ delta: StoredProgress, packID: Int64) throws {
        try database.execute("""
            UPDATE packd_progress SET completed_resources = completed_resources + ?2,
              completed_bytes = completed_bytes + ?3, completed_tiles = completed_tiles + ?4,
              completed_tile_bytes = completed_tile_bytes + ?5 WHERE pack_id = ?1
            """, [.integer(packID), .integer(delta.completedResources), .integer(delta.completedBytes),
                  .integer(delta.completedTiles), .integer(delta.completedTileBytes)])
    }
}
