import Packs
extension PackTileSource {
    /// The pack's tilesets, most tiles first.
    public static func all(pack: Int64, in database: Database) throws(ExportError) -> [PackTileSource] {
        return try ExportError.mapping {
            guard try database.scalarInt("SELECT count(*) FROM regions WHERE id = ?1", [.integer(pack)]) == 1 else {
                throw ExportError.packNotFound(pack)
            }
            var sources: [PackTileSource] = []
            try database.cachedStatement("""
                SELECT t.url_template, t.pixel_ratio, count(*) FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
                WHERE rt.region_id = ?1 AND t.data IS NOT NULL
                GROUP BY t.url_template, t.pixel_ratio ORDER BY count(*) DESC, t.url_template, t.pixel_ratio
                """).forEachRow([.integer(pack)]) { row in
                sources.append(PackTileSource(urlTemplate: row.string(at: 0) ?? "", pixelRatio: row.int64(at: 1),
                                              tileCount: row.int64(at: 2)))
            }
            return sources
        }
    }

    /// The tileset to export of `pack` (see `[PackTileSource].choose`).
    public static func choose(pack: Int64, urlTemplate: String?, in database: Database) throws(ExportError) -> PackTileSource {
        try all(pack: pack, in: database).choose(urlTemplate: urlTemplate)
    }
}
