import ArgumentParser
import Foundation

/// `packd export`: downloads a pack from a running packd as a file (for scripts), through
/// `GET /v1/packs/{id}/export`. Exits non-zero with the server's problem on any failure.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Download a pack from a running packd as a MapLibre offline database, MBTiles or PMTiles file."
    )

    @OptionGroup var connection: ServerConnectionOptions

    @Option(help: "maplibre, mbtiles or pmtiles.")
    var format = "maplibre"

    @Option(help: "For mbtiles/pmtiles: the style source name or tile URL template to export.")
    var source: String?

    @Flag(help: "Export a pack that is not complete yet.")
    var partial = false

    @Option(name: .shortAndLong, help: "The file to write (default pack-ID.db|mbtiles|pmtiles).")
    var output: String?

    @Argument(help: "The pack's id.")
    var packID: Int64

    func validate() throws {
        guard ["maplibre", "mbtiles", "pmtiles"].contains(format) else {
            throw ValidationError("--format must be maplibre, mbtiles or pmtiles")
        }
        guard packID >= 1 else { throw ValidationError("the pack id must be a positive integer") }
    }

    func run() throws {
        let client = try ClientExit.run("export") { try connection.client() }
        var query = "format=\(format)"
        if let source {
            query += "&source=" + (source.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? source)
        }
        if partial { query += "&partial=true" }
        let file = output ?? "pack-\(packID).\(["maplibre": "db"][format] ?? format)"
        let bytes = try ClientExit.run("export") { try client.download("/v1/packs/\(packID)/export?\(query)", to: file) }
        print("wrote \(file) (\(bytes) bytes)")
    }
}
