/// Stored tile sizes for download estimates (`POST /v1/estimates`).
extension SQLiteConnection {
    /// How many tiles, and their stored bytes (`LENGTH(data)`, 0 for "no content"), a bounded
    /// sample of one source's zoom holds: at most `limit` rows read through the `tiles` UNIQUE
    /// index (url_template, pixel_ratio, z, …), so the cost does not grow with the store.
    public func tileSizeSample(urlTemplate: String, pixelRatio: Int64, z: Int64, limit: Int) throws -> (tiles: Int64, bytes: Int64) {
        var sample: (tiles: Int64, bytes: Int64) = (0, 0)
        try database.cachedStatement("""
            SELECT COUNT(*), IFNULL(SUM(LENGTH(data)), 0) FROM
              (SELECT data FROM tiles WHERE url_template = ?1 AND pixel_ratio = ?2 AND z = ?3 LIMIT ?4)
            """).forEachRow([.text(urlTemplate), .integer(pixelRatio), .integer(z), .integer(Int64(limit))]) {
            sample = ($0.int64(at: 0), $0.int64(at: 1))
        }
        return sample
    }
}
