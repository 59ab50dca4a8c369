import Server
import Store

/// Builds one export into a scratch file on a pool thread: checks the pack (exists, `complete`
/// unless `partial`), resolves the tile source, and writes the file with the Store's exporters.
/// What the client got wrong comes back as a `Problem`; store and disk failures are thrown.
enum ExportJob {
    enum Outcome: Sendable {
        case written(tiles: Int)
        case refused(Problem)
    }

    static func run(pack: Int64, request: ExportRequest, to path: String, reader: StoreReader) throws -> Outcome {
        guard let record = try reader.pack(pack) else { return .refused(PackRoutes.notFound(pack)) }
        if record.state != .complete, !request.partial {
            return .refused(Problem(.conflict, detail: "pack \(pack) is \(record.state), not complete; add partial=true to export what it holds so far"))
        }
        do {
            switch request.format {
            case .maplibre:
                let summary = try MapLibreExport.write(pack: pack, databasePath: reader.database.path, to: path)
                return .written(tiles: summary.tiles)
            case .mbtiles, .pmtiles:
                let sources = try PackTileSource.all(pack: pack, in: reader.database)
                let template = try request.source.map {
                    try ExportSourceName.urlTemplate(for: $0, pack: pack, sources: sources, reader: reader)
                }
                let source = try PackTileSource.choose(pack: pack, urlTemplate: template, in: reader.database)
                let write = request.format == .mbtiles ? MBTilesExport.write : PMTilesExport.write
                let summary = try write(pack, source, record.name, reader.database, path)
                return .written(tiles: summary.tileCount)
            }
        } catch let error as ExportError {
            guard let problem = problem(error, pack: pack) else { throw error }
            return .refused(problem)
        }
    }

    /// The client-facing answer to an export error, or nil for a server failure (500).
    static func problem(_ error: ExportError, pack: Int64) -> Problem? {
        switch error {
        case .packNotFound(let id): return PackRoutes.notFound(id)
        case .noTiles:
            return Problem(.conflict, detail: "pack \(pack) holds no tiles to put in an archive; the maplibre format exports its other resources")
        case .ambiguousTileSource(let sources):
            let detail = "the pack has \(sources.count) tile sources; name one with source= (a style source name or one of: "
                + sources.map(\.urlTemplate).joined(separator: ", ") + ")"
            return Problem(.validationFailed, detail: detail, errors: [Problem.FieldError(parameter: "source", detail: detail)])
        case .unknownTileSource(let name):
            let detail = "the pack has no tile source named \(name)"
            return Problem(.validationFailed, detail: detail, errors: [Problem.FieldError(parameter: "source", detail: detail)])
        case .invalidTile, .database, .file:
            return nil
        }
    }
}
