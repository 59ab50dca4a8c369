/// One tileset stored for a pack: a URL template at one pixel ratio. MBTiles and PMTiles hold
/// exactly one, so the API lists these when a pack has several (`&source=`).
public struct PackTileSource: Equatable, Sendable {
    public let urlTemplate: String
    public let pixelRatio: Int64
    /// Stored tiles with content (no-content rows are not exported).
    public let tileCount: Int64

    public init(urlTemplate: String, pixelRatio: Int64, tileCount: Int64) {
        self.urlTemplate = urlTemplate
        self.pixelRatio = pixelRatio
        self.tileCount = tileCount
    }

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

    /// The tileset to export: the one named by `urlTemplate` (highest pixel ratio if several),
    /// or the pack's only one.
    public static func choose(pack: Int64, urlTemplate: String?, in database: Database) throws(ExportError) -> PackTileSource {
        let sources = try all(pack: pack, in: database)
        if let urlTemplate {
            guard let source = sources.filter({ $0.urlTemplate == urlTemplate }).max(by: { $0.pixelRatio < $1.pixelRatio }) else {
                throw .unknownTileSource(urlTemplate)
            }
            return source
        }
        guard let first = sources.first else { throw .noTiles }
        guard sources.count == 1 else { throw .ambiguousTileSource(sources) }
        return first
    }
}
