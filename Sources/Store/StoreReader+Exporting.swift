import Packs

/// Exports read a snapshot of the pack on a pool connection and write the file with the Store's
/// exporters (MapLibre's schema copied row for row; MBTiles and PMTiles of one tileset).
extension StoreReader: PackExporting {
    public func exportMapLibre(pack: Int64, to path: String) throws(ExportError) -> (resources: Int, tiles: Int) {
        let summary = try MapLibreExport.write(pack: pack, databasePath: database.path, to: path)
        return (summary.resources, summary.tiles)
    }

    public func tileSources(pack: Int64) throws(ExportError) -> [PackTileSource] {
        try PackTileSource.all(pack: pack, in: database)
    }

    public func exportTileArchive(pack: Int64, source: PackTileSource, format: TileArchiveFormat, name: String,
                                  to path: String) throws(ExportError) -> Int {
        switch format {
        case .mbtiles: try MBTilesExport.write(pack: pack, source: source, name: name, from: database, to: path).tileCount
        case .pmtiles: try PMTilesExport.write(pack: pack, source: source, name: name, from: database, to: path).tileCount
        }
    }
}
