import Foundation
import Packs
import TileFormats

/// Writes one tileset of a pack as MBTiles 1.3: `tiles` in TMS row order (y flipped), vector
/// tiles gzip-compressed, and `metadata` with name, format, bounds, center, zooms and — for
/// vector tiles — `json` holding `vector_layers`, which GDAL and tile servers require. Rows are
/// streamed from the pack database into the new file through `ExportPipeline` (encoding on the
/// calling thread, SQLite inserts on a second one); at most a few 512 KiB batches are in flight.
public enum MBTilesExport {
    static let schema = """
        CREATE TABLE metadata (name TEXT, value TEXT);
        CREATE UNIQUE INDEX name ON metadata (name);
        CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);
        CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row);
        """

    /// A scratch file until the caller streams it: no journal, no fsync, no lock traffic. The
    /// default 4 KiB pages stay: 32 KiB pages (tiles inside their leaf, no overflow chains)
    /// measured no faster and left the file 25% larger, as ~9 KB tiles pack badly into them.
    static let outputPragmas = """
        PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;
        PRAGMA cache_size = -16384
        """

    /// Exports the tileset `request` names (`request.source`, or the pack's only one), read
    /// through `database` (a read-only connection to a packd database or a staged copy) in one
    /// read transaction, to a new file at `path` (replaced if present). The version's name
    /// becomes the tileset's `name`. Deterministic: tiles in z/x/y order, metadata in a fixed
    /// order, no time field.
    public static func write(_ request: PackExportRequest, from database: Database,
                             to path: String) throws(ExportError) -> ArchiveExportSummary {
        try ExportError.inReadTransaction(database) { () throws(ExportError) in
            let (exported, source) = try ExportedVersion.resolveArchive(request, in: database)
            return try writeSnapshot(pack: request.pack, source: source, name: exported.name, from: database, to: path)
        }
    }

    private static func writeSnapshot(pack: Int64, source: PackTileSource, name: String, from database: Database,
                                      to path: String) throws(ExportError) -> ArchiveExportSummary {
        let extent = try TileSetExtent.of(source, pack: pack, in: database)
        let encoder = ArchiveTileEncoder(collectsLayers: true)
        let count = try ExportError.mapping {
            try? FileManager.default.removeItem(atPath: path)
            return try ExportPipeline<EncodedTileSet>.run(produce: { send in
                var batch = EncodedTileBatch()
                var count = 0
                try database.cachedStatement(PackTileRows.orderedByZXY).forEachRow(PackTileRows.arguments(pack, source)) { row in
                    let (z, x, y) = (row.int64(at: 0), row.int64(at: 1), row.int64(at: 2))
                    guard z >= 0, z <= Int64(HilbertTileID.maximumZoom), x >= 0, y >= 0, x < (1 << z), y < (1 << z) else {
                        throw ExportError.invalidTile(z: z, x: x, y: y, reason: "outside the zoom's grid")
                    }
                    try row.withBlob(at: 3) { data in
                        guard let data else { return }
                        try encoder.encode(data: data, compressed: row.int64(at: 4) != 0, z: z, x: x, y: y) { bytes in
                            batch.append(z: z, x: x, y: (1 << z) - 1 - y, checksum: nil, bytes: bytes)
                        }
                    }
                    if batch.isFull { try send(&batch) }
                    count += 1
                }
                try send(&batch)
                return (encoder.encodedTileSet, count)
            }, consume: { next in
                try insertTiles(from: next, name: name, extent: extent, to: path)
            })
        }
        return ArchiveExportSummary(source: source, format: encoder.format ?? .mvt, extent: extent, tileCount: count,
                                    vectorLayers: encoder.layers.layers.keys.sorted(),
                                    unreadableVectorTiles: encoder.unreadableVectorTiles)
    }

    /// The writing stage: creates the file, inserts the tiles `next` delivers in one
    /// transaction, then the metadata.
    private static func insertTiles(from next: () throws -> ExportPipeline<EncodedTileSet>.Delivery, name: String,
                                    extent: TileSetExtent, to path: String) throws {
        let output = try Database(path: path, mode: .readWriteCreate)
        try output.execute(outputPragmas)
        try output.execute(schema)
        try output.transaction {
            let insert = try output.cachedStatement(
                "INSERT INTO tiles (zoom_level, tile_column, tile_row, tile_data) VALUES (?1, ?2, ?3, ?4)")
            var tileSet: EncodedTileSet?
            while tileSet == nil {
                switch try next() {
                case .batch(let batch):
                    try batch.forEach { tile, bytes in
                        insert.reset()
                        try insert.bind(tile.z, at: 1)
                        try insert.bind(tile.x, at: 2)
                        try insert.bind(tile.y, at: 3)
                        try insert.bind(blob: bytes, at: 4)
                        try insert.step()
                    }
                case .finished(let finished):
                    tileSet = finished
                }
            }
            guard let tileSet else { return }
            let metadata = try Self.metadata(name: name, format: tileSet.format, extent: extent, layers: tileSet.layers)
            let insertMetadata = try output.cachedStatement("INSERT INTO metadata (name, value) VALUES (?1, ?2)")
            for (key, value) in metadata {
                try insertMetadata.execute([.text(key), .text(value)])
            }
        }
        output.finalizeStatements()
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
