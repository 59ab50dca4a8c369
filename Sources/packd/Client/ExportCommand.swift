import ArgumentParser
import Foundation
import Packs

/// `packd export`: downloads a pack from a running packd as a file (for scripts): the current
/// version (`GET /v1/packs/{id}/export`), or with `--version` that version's immutable artifact
/// (and with `--since` the delta from an older one). A cut transfer is resumed with `Range`, and
/// the file is checked against the SHA-256 of its `ETag` before it is kept. Exits non-zero with
/// the server's problem on any failure.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Download a pack from a running packd as a MapLibre offline database, MBTiles or PMTiles file (resumable, checked)."
    )

    @OptionGroup var connection: ServerConnectionOptions

    @Option(help: "maplibre, mbtiles or pmtiles.")
    var format = "maplibre"

    @Option(help: "For mbtiles/pmtiles: the style source name or tile URL template to export.")
    var source: String?

    @Flag(help: "Export a pack that is not complete yet.")
    var partial = false

    @Option(help: "The pack version to download (default: the current one).")
    var version: Int64?

    @Option(help: "With --version, maplibre only: the delta for a device holding this older version.")
    var since: Int64?

    @Option(name: .shortAndLong, help: "The file to write (default pack-ID[-vV][-since-N].db|mbtiles|pmtiles).")
    var output: String?

    @Argument(help: "The pack's id.")
    var packID: Int64

    func validate() throws {
        try Self.check(format: format, packID: packID)
        if let version, version < 1 { throw ValidationError("--version must be 1 or more") }
        if let since {
            guard version != nil else { throw ValidationError("--since needs --version (packd update-info says which to download)") }
            guard since >= 0, format == "maplibre" else { throw ValidationError("--since is a version (0 or more) of a maplibre export") }
        }
        if partial, version != nil { throw ValidationError("--partial exports a pack that has no version yet; drop --version") }
    }

    /// The checks `export` and `update-info` share.
    static func check(format: String, packID: Int64) throws {
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
        if let since { query += "&since=\(since)" }
        let path = version.map { "/v1/packs/\(packID)/versions/\($0)/export?\(query)" } ?? "/v1/packs/\(packID)/export?\(query)"
        let suffix = (version.map { "-v\($0)" } ?? "") + (since.map { "-since-\($0)" } ?? "")
        let file = output ?? "pack-\(packID)\(suffix).\(["maplibre": "db"][format] ?? format)"
        let outcome = try ClientExit.run("export") { try ResumableDownload(client: client, path: path, output: file).run() }
        var line = "wrote \(file) (\(outcome.bytes) bytes"
        if let sha256 = outcome.sha256 { line += ", sha256 \(sha256) checked" }
        if let resumedAt = outcome.resumedAt { line += ", resumed at byte \(resumedAt)" }
        print(line + ")")
    }
}

/// `packd update-info`: what a device holding a version downloads next
/// (`GET /v1/packs/{id}/updates`), printed as the API's JSON.
struct UpdateInfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update-info",
        abstract: "Show what a device holding version N of a pack downloads next: none, a delta or the full artifact."
    )

    @OptionGroup var connection: ServerConnectionOptions

    @Option(help: "The version the device holds (0 for none).")
    var from: Int64

    @Option(help: "maplibre, mbtiles or pmtiles.")
    var format = "maplibre"

    @Argument(help: "The pack's id.")
    var packID: Int64

    func validate() throws {
        try ExportCommand.check(format: format, packID: packID)
        guard from >= 0 else { throw ValidationError("--from must be 0 or more") }
    }

    func run() throws {
        let client = try ClientExit.run("update-info") { try connection.client() }
        let update = try ClientExit.run("update-info") {
            try client.get(PackUpdate.self, "/v1/packs/\(packID)/updates?from=\(from)&format=\(format)")
        }
        print(String(decoding: (try? SortedJSONEncoder.encode(update)) ?? Array("null".utf8), as: UTF8.self))
    }
}
