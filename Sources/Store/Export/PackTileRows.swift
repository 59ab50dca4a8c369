import Packs
import TileFormats

/// The queries that read one tileset of a pack, shared by the archive exports. Rows without
/// content (`data IS NULL`: the upstream answered 204/404) are not tiles an archive can hold.
enum PackTileRows {
    /// z, x, y, data, compressed — in z/x/y order (MBTiles' index order).
    static let orderedByZXY = """
        SELECT t.z, t.x, t.y, t.data, t.compressed FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
        WHERE rt.region_id = ?1 AND t.url_template = ?2 AND t.pixel_ratio = ?3 AND t.data IS NOT NULL
        ORDER BY t.z, t.x, t.y
        """

    /// id, z, x, y without bodies: PMTiles sorts these by Hilbert id, then reads bodies by id.
    static let coordinates = """
        SELECT t.id, t.z, t.x, t.y FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
        WHERE rt.region_id = ?1 AND t.url_template = ?2 AND t.pixel_ratio = ?3 AND t.data IS NOT NULL
        """

    static let bodyByID = "SELECT data, compressed FROM tiles WHERE id = ?1"

    static func arguments(_ pack: Int64, _ source: PackTileSource) -> [DatabaseValue] {
        [.integer(pack), .text(source.urlTemplate), .integer(source.pixelRatio)]
    }
}
