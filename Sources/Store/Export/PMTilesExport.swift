import Foundation
import Packs
import TileFormats

/// Writes one tileset of a pack as a PMTiles v3 archive. PMTiles wants tiles in Hilbert order,
/// which no index gives, so the export reads coordinates first (16 bytes a tile), sorts them, then
/// reads each body by primary key, encodes it and hands it through `ExportPipeline` to a
/// `PMTilesWriter` on a second thread. Memory stays flat in tile bodies (a few 512 KiB batches in
/// flight); only ids and directory entries scale with the tile count.
public enum PMTilesExport {
    /// As `MBTilesExport.write`: the tileset `request` names, in one read transaction.
    /// Deterministic: tiles in Hilbert order, duplicates found by content, metadata sorted.
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
        return try ExportError.mapping {
            var order: [(tileID: UInt64, rowID: Int64)] = []
            order.reserveCapacity(Int(source.tileCount))
            try database.cachedStatement(PackTileRows.coordinates).forEachRow(PackTileRows.arguments(pack, source)) { row in
                let (z, x, y) = (row.int64(at: 1), row.int64(at: 2), row.int64(at: 3))
                guard let z32 = Int(exactly: z), let x32 = Int(exactly: x), let y32 = Int(exactly: y),
                      let id = HilbertTileID.encode(z: z32, x: x32, y: y32) else {
                    throw ExportError.invalidTile(z: z, x: x, y: y, reason: "outside the zoom's grid")
                }
                order.append((id, row.int64(at: 0)))
            }
            order.sort { $0.tileID < $1.tileID }

            let tileSet = try ExportPipeline<EncodedTileSet>.run(produce: { send in
                var batch = EncodedTileBatch()
                let body = try database.cachedStatement(PackTileRows.bodyByID)
                for tile in order {
                    try body.bind([.integer(tile.rowID)])
                    guard try body.step() else { continue }
                    let compressed = body.int64(at: 1) != 0
                    try body.withBlob(at: 0) { data in
                        guard let data else { return }
                        let (z, x, y) = HilbertTileID.decode(tile.tileID) ?? (0, 0, 0)
                        let (z64, x64, y64) = (Int64(z), Int64(x), Int64(y))
                        try encoder.encode(data: data, compressed: compressed, z: z64, x: x64, y: y64) { bytes in
                            // Every vector tile leaves the encoder as a gzip member: its trailer
                            // already holds the CRC-32 the writer would otherwise compute again.
                            let checksum = encoder.format?.isVector == true ? Gzip.trailerCRC(bytes) : nil
                            batch.append(z: z64, x: x64, y: y64, tileID: tile.tileID, checksum: checksum, bytes: bytes)
                        }
                    }
                    body.reset()
                    if batch.isFull { try send(&batch) }
                }
                try send(&batch)
                return (encoder.encodedTileSet, encoder.encodedTileSet)
            }, consume: { next in
                try appendTiles(from: next, name: name, extent: extent, to: path)
            })
            return ArchiveExportSummary(source: source, format: tileSet.format, extent: extent, tileCount: order.count,
                                        vectorLayers: tileSet.layers.layers.keys.sorted(),
                                        unreadableVectorTiles: encoder.unreadableVectorTiles)
        }
    }

    /// The writing stage: streams the tiles `next` delivers into a new archive, then writes its
    /// metadata, directories and header.
    private static func appendTiles(from next: () throws -> ExportPipeline<EncodedTileSet>.Delivery, name: String,
                                    extent: TileSetExtent, to path: String) throws {
        let writer = try PMTilesWriter(path: path)
        while true {
            switch try next() {
            case .batch(let batch):
                try batch.forEach { tile, bytes in
                    try writer.append(tileID: tile.tileID, bytes: bytes, checksum: tile.checksum)
                }
            case .finished(let tileSet):
                let format = tileSet.format
                var header = PMTilesHeader()
                header.tileType = format.pmtilesType
                header.tileCompression = format.isVector ? .gzip : .none
                header.minZoom = UInt8(extent.minZoom)
                header.maxZoom = UInt8(extent.maxZoom)
                header.minLonE7 = e7(extent.west)
                header.minLatE7 = e7(extent.south)
                header.maxLonE7 = e7(extent.east)
                header.maxLatE7 = e7(extent.north)
                header.centerZoom = UInt8(extent.centerZoom)
                header.centerLonE7 = e7(extent.centerLongitude)
                header.centerLatE7 = e7(extent.centerLatitude)
                _ = try writer.finish(header: header, metadataJSON: metadata(name: name, format: format, layers: tileSet.layers))
                return
            }
        }
    }

    static func e7(_ degrees: Double) -> Int32 {
        Int32(clamping: Int64((degrees * 10_000_000).rounded()))
    }

    static func metadata(name: String, format: TileFormat, layers: VectorTileLayers) throws -> [UInt8] {
        var object: [String: Any] = ["name": name, "format": format.mbtilesFormat]
        if format.isVector { object["vector_layers"] = layers.tileJSONVectorLayers }
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }
}
