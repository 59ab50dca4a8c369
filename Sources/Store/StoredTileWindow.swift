/// What the store holds for one window of tiles (one source, one zoom) as a download sees it:
/// the tiles already linked to the pack (skipped), and those stored by another pack or in the
/// ambient cache and fresh (linked instead of fetched). Everything else is downloaded.
public struct StoredTileWindow: Sendable {
    public var linkedHere: TileBitmap
    public var linkable: TileBitmap
}

extension StoreReader {
    /// One query per window over the `tiles` UNIQUE index: every stored tile of the window, with
    /// whether `packID` links it and whether it is fresh at `now` (no `expires`, or a later one).
    public func tileWindow(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                           xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64) throws -> StoredTileWindow {
        var window = StoredTileWindow(linkedHere: try TileBitmap(xRange: xRange, yRange: yRange),
                                      linkable: try TileBitmap(xRange: xRange, yRange: yRange))
        let statement = try database.cachedStatement("""
            SELECT x, y, EXISTS (SELECT 1 FROM region_tiles WHERE region_id = ?8 AND tile_id = tiles.id),
              expires IS NULL OR expires > ?9
            FROM tiles
            WHERE url_template = ?1 AND pixel_ratio = ?2 AND z = ?3 AND x BETWEEN ?4 AND ?5 AND y BETWEEN ?6 AND ?7
            """)
        try statement.forEachRow([.text(urlTemplate), .integer(pixelRatio), .integer(z), .integer(xRange.lowerBound),
                                  .integer(xRange.upperBound), .integer(yRange.lowerBound), .integer(yRange.upperBound),
                                  .integer(packID), .integer(now)]) {
            if $0.int64(at: 2) != 0 {
                window.linkedHere.insert(x: $0.int64(at: 0), y: $0.int64(at: 1))
            } else if $0.int64(at: 3) != 0 {
                window.linkable.insert(x: $0.int64(at: 0), y: $0.int64(at: 1))
            }
        }
        return window
    }
}
