import ArgumentParser
import Foundation

/// `packd import`: uploads a MapLibre offline database to a running packd (for scripts), through
/// `POST /v1/imports`, and prints the server's result (packs added and updated). Exits non-zero
/// with the server's problem on any failure.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Merge a MapLibre offline database (e.g. another packd's maplibre export) into a running packd."
    )

    @OptionGroup var connection: ServerConnectionOptions

    @Argument(help: "The database file to upload.")
    var file: String

    func run() throws {
        let result = try ClientExit.run("import") {
            let client = try connection.client()
            return try client.upload("/v1/imports", from: file, contentType: "application/vnd.sqlite3")
        }
        FileHandle.standardOutput.write(result)
        if result.last != 0x0A { print() }
    }
}
