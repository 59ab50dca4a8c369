import Packs
import Server

/// Builds one export into a scratch file on a pool thread: checks the pack (exists, `complete`
/// unless `partial`), resolves the tile source, and writes the file with the Store's exporters.
/// What the client got wrong comes back as a `Problem`; store and disk failures are thrown.
enum ExportJob {
    enum Outcome: Sendable {
        case written(tiles: Int)
        case refused(Problem)
    }

    static func run(pack: Int64, request: ExportRequest, to path: String, reader: any StoreReading & PackExporting) throws -> Outcome {
        guard let record = try reader.pack(pack) else { return .refused(PackRoutes.notFound(pack)) }
        if record.state != .complete, !request.partial {
            return .refused(Problem(.conflict, detail: "pack \(pack) is \(record.state), not complete; add partial=true to export what it holds so far"))
        }
        do {
            switch request.format {
            case .maplibre:
                return .written(tiles: try reader.exportMapLibre(pack: pack, to: path).tiles)
            case .mbtiles, .pmtiles:
                let sources = try reader.tileSources(pack: pack)
                let template = try request.source.map {
                    try ExportSourceName.urlTemplate(for: $0, pack: pack, sources: sources, reader: reader)
                }
                let source = try sources.choose(urlTemplate: template)
                let format: TileArchiveFormat = request.format == .mbtiles ? .mbtiles : .pmtiles
                return .written(tiles: try reader.exportTileArchive(pack: pack, source: source, format: format, name: record.name,
                                                                    to: path))
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
        case .invalidTile, .store, .file:
            return nil
        }
    }
}
