import Packs
import Server

/// Builds one export on a pool thread: checks the pack (exists; without a version, `complete`
/// unless `partial`), resolves the tile source (a style source name or a URL template), and
/// writes the file with the Store's exporters (`PackExportRequest`). What the client got wrong
/// comes back as a `Problem`; store and disk failures are thrown.
enum ExportJob {
    enum Outcome: Sendable {
        case written(tiles: Int)
        case refused(Problem)
    }

    /// `version`: the version to write, an artifact's (the same bytes every time); nil: what the
    /// pack holds now (a pack without a version yet).
    static func run(pack: Int64, request: ExportRequest, version: Int64?, to path: String,
                    reader: any StoreReading & PackExporting) throws -> Outcome {
        guard let record = try reader.pack(pack) else { return .refused(PackRouteGroup.notFound(pack)) }
        if version == nil, record.state != .complete, !request.partial {
            return .refused(Problem(.conflict, detail: "pack \(pack) is \(record.state), not complete; add partial=true to export what it holds so far"))
        }
        do {
            var export = PackExportRequest(pack: pack, version: version, format: request.format, since: request.since)
            if request.format != .maplibre {
                let sources = try reader.tileSources(pack: pack)
                let template = try request.source.map {
                    try ExportSourceName.urlTemplate(for: $0, pack: pack, sources: sources, reader: reader)
                }
                export.source = try sources.choose(urlTemplate: template).urlTemplate
            }
            return .written(tiles: try reader.export(export, to: path).tiles)
        } catch let error as ExportError {
            guard let problem = problem(error, pack: pack) else { throw error }
            return .refused(problem)
        }
    }

    /// The client-facing answer to an export error, or nil for a server failure (500).
    static func problem(_ error: ExportError, pack: Int64) -> Problem? {
        switch error {
        case .packNotFound(let id): return PackRouteGroup.notFound(id)
        case .noTiles:
            return Problem(.conflict, detail: "pack \(pack) holds no tiles to put in an archive; the maplibre format exports its other resources")
        case .ambiguousTileSource(let sources):
            let detail = "the pack has \(sources.count) tile sources; name one with source= (a style source name or one of: "
                + sources.map(\.urlTemplate).joined(separator: ", ") + ")"
            return Problem(.validationFailed, detail: detail, errors: [Problem.FieldError(parameter: "source", detail: detail)])
        case .unknownTileSource(let name):
            let detail = "the pack has no tile source named \(name)"
            return Problem(.validationFailed, detail: detail, errors: [Problem.FieldError(parameter: "source", detail: detail)])
        case .invalidRequest(let field, let detail):
            return Problem(.validationFailed, detail: detail, errors: [Problem.FieldError(parameter: field, detail: detail)])
        case .versionChanging:
            // A refresh (of this pack, or of one sharing its tiles) is changing its rows: the
            // version's file is built again once the next version is cut (`Retry-After`).
            return Problem(.unavailable, detail: "pack \(pack): " + error.description)
        case .unknownVersion, .versionNotRetained, .versionSuperseded, .baseNotRetained:
            return Problem(.conflict, detail: error.description)
        case .invalidTile, .store, .file:
            return nil
        }
    }
}
