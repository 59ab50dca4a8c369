import Packs

/// Exports read a snapshot of the pack on a pool connection and write the file with the Store's
/// exporters (MapLibre's schema copied row for row; MBTiles and PMTiles of one tileset).
extension StoreReader: PackExporting {
    public func export(_ request: PackExportRequest, to path: String) throws(ExportError) -> PackExportSummary {
        try Self.export(request, from: database, to: path)
    }

    public func tileSources(pack: Int64) throws(ExportError) -> [PackTileSource] {
        try PackTileSource.all(pack: pack, in: database)
    }

    /// Writes `request` from `database`, a connection to packd's SQLite file or to a cluster
    /// node's staged copy of a pack (the same tables): what both stores' exports run.
    public static func export(_ request: PackExportRequest, from database: Database,
                              to path: String) throws(ExportError) -> PackExportSummary {
        if let problem = request.problem { throw problem }
        switch request.format {
        case .maplibre:
            let summary = try MapLibreExport.write(request, databasePath: database.path, to: path)
            return PackExportSummary(resources: summary.resources, tiles: summary.tiles, version: request.version)
        case .mbtiles:
            let summary = try MBTilesExport.write(request, from: database, to: path)
            return PackExportSummary(resources: 0, tiles: summary.tileCount, version: request.version)
        case .pmtiles:
            let summary = try PMTilesExport.write(request, from: database, to: path)
            return PackExportSummary(resources: 0, tiles: summary.tileCount, version: request.version)
        }
    }
}
