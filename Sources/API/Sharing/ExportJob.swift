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
            var export = PackExportRequest(pack: pack, version: record.state == .complete && record.version > 0 ? record.version : nil,
                                           format: request.format.packFormat)
            if request.format != .maplibre {
                let sources = try reader.tileSources(pack: pack)
                let template = try request.source.map {
                    try ExportSourceName.urlTemplate(for: $0, pack: pack, sources: sources, reader: reader)
                }
                export.source = try sources.choose(urlTemplate: template).urlTemplate
            }
            return .written(tiles: try exportNow(export, to: path, reader: reader).tiles)
        } catch let error as ExportError {
            guard let problem = problem(error, pack: pack) else { throw error }
            return .refused(problem)
        }
    }

    /// Exports `request`; while a refresh is changing the pack's rows (its version cannot be built
    /// now), what the pack holds now, unversioned.
    private static func exportNow(_ request: PackExportRequest, to path: String,
                                  reader: any PackExporting) throws(ExportError) -> PackExportSummary {
        do {
            return try reader.export(request, to: path)
        } catch {
            guard case .versionChanging = error else { throw error }
        }
        var unversioned = request
        unversioned.version = nil
        return try reader.export(unversioned, to: path)
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
        case .invalidRequest(let field, let detail):
            return Problem(.validationFailed, detail: detail, errors: [Problem.FieldError(parameter: field, detail: detail)])
        case .unknownVersion, .versionNotRetained, .versionSuperseded, .versionChanging, .baseNotRetained:
            return Problem(.conflict, detail: error.description)
        case .invalidTile, .store, .file:
            return nil
        }
    }
}
