import Foundation

/// Writes one tileset of a pack as MBTiles 1.3: `tiles` in TMS row order (y flipped), vector
/// tiles gzip-compressed, and `metadata` with name, format, bounds, center, zooms and — for
/// vector tiles — `json` holding `vector_layers`, which GDAL and tile servers require. Rows are
/// streamed from the pack database into the new file; no tile is held longer than its insert.
public enum MBTilesExport {
    static let schema = """
        CREATE TABLE metadata (name TEXT, value TEXT);
        CREATE UNIQUE INDEX name ON metadata (name);
        CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);
        CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row);
        """

    /// Exports `source` of `pack` read through `database` (a read-only connection) to a new
    /// file at `path` (replaced if present). `name` becomes the tileset's `name`.
    public static func write(pack: Int64, source: PackTileSource, name: String, from database: Database,
                             to path: String) throws(ExportError) -> ArchiveExportSummary {
        try ExportError.inReadTransaction(database) { () throws(ExportError) in
            try writeSnapshot(pack: pack, source: source, name: name, from: database, to: path)
        }
    }

    private static func writeSnapshot(pack: Int64, source: PackTileSource, name: String, from database: Database,
                                      to path: String) throws(ExportError) -> ArchiveExportSummary {
        let extent = try TileSetExtent.of(source, pack: pack, in: database)
        let encoder = ArchiveTileEncoder(collectsLayers: true)
        var count = 0
        try ExportError.mapping {
            try? FileManager.default.removeItem(atPath: path)
            let output = try Database(path: path, mode: .readWriteCreate)
            // A scratch file until the caller streams it: no journal, no fsync.
            try output.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
            try output.execute(schema)
            try output.transaction {
                let insert = try output.cachedStatement(
                    "INSERT INTO tiles (zoom_level, tile_column, tile_row, tile_data) VALUES (?1, ?2, ?3, ?4)")
                try database.cachedStatement(PackTileRows.orderedByZXY).forEachRow(PackTileRows.arguments(pack, source)) { row in
                    let (z, x, y) = (row.int64(at: 0), row.int64(at: 1), row.int64(at: 2))
                    guard z >= 0, z <= Int64(HilbertTileID.maximumZoom), x >= 0, y >= 0, x < (1 << z), y < (1 << z) else {
                        throw ExportError.invalidTile(z: z, x: x, y: y, reason: "outside the zoom's grid")
                    }
                    try row.withBlob(at: 3) { data in
                        guard let data else { return }
                        try encoder.encode(data: data, compressed: row.int64(at: 4) != 0, z: z, x: x, y: y) { bytes in
                            insert.reset()
                            try insert.bind(z, at: 1)
                            try insert.bind(x, at: 2)
                            try insert.bind((1 << z) - 1 - y, at: 3)
                            try insert.bind(blob: bytes, at: 4)
                            try insert.step()
                        }
                    }
                    count += 1
                }
                let format = encoder.format ?? .mvt
                let metadata = try Self.metadata(name: name, format: format, extent: extent, layers: encoder.layers)
                let insertMetadata = try output.cachedStatement("INSERT INTO metadata (name, value) VALUES (?1, ?2)")
                for (key, value) in metadata {
                    try insertMetadata.execute([.text(key), .text(value)])
                }
            }
            output.finalizeStatements()
        }
        return ArchiveExportSummary(source: source, format: encoder.format ?? .mvt, extent: extent, tileCount: count,
                                    vectorLayers: encoder.layers.layers.keys.sorted(),
                                    unreadableVectorTiles: encoder.unreadableVectorTiles)
    }

    /// The `metadata` rows of MBTiles 1.3, in a stable order.
    static func metadata(name: String, format: TileFormat, extent: TileSetExtent,
                         layers: VectorTileLayers) throws -> [(String, String)] {
        func number(_ value: Double) -> String { String(format: "%.6f", value) }
        var rows: [(String, String)] = [
            ("name", name),
            ("format", format.mbtilesFormat),
            ("bounds", [extent.west, extent.south, extent.east, extent.north].map(number).joined(separator: ",")),
            ("center", "\(number(extent.centerLongitude)),\(number(extent.centerLatitude)),\(extent.centerZoom)"),
            ("minzoom", String(extent.minZoom)),
            ("maxzoom", String(extent.maxZoom)),
            ("type", "baselayer"),
            ("version", "1.3"),
        ]
        if format.isVector {
            let json = try JSONSerialization.data(withJSONObject: ["vector_layers": layers.tileJSONVectorLayers],
                                                  options: [.sortedKeys])
            rows.append(("json", String(decoding: json, as: UTF8.self)))
        }
        return rows
    }
}
