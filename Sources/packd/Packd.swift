import API
import ArgumentParser

/// The packd executable: a map-region download service. `serve` runs the HTTP API; the other
/// subcommands are its command line for scripts, talking to a running server.
@main
struct Packd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "packd",
        abstract: "Downloads map regions into MapLibre offline databases and serves them over HTTP.",
        discussion: """
            Client subcommands talk to a running server: --server or PACKD_SERVER (default \
            http://127.0.0.1:8080), the API key from --api-key-file or PACKD_API_KEY. Exit status: \
            0 done (a pack complete), 1 the pack failed, 64 usage or a request the server refused \
            as given (an invalid region), 69 the server is unreachable, 70 a server error, 77 the \
            key was refused (401/403).
            """,
        // The version `packd_build_info` exports.
        version: BuildInfo.version,
        subcommands: [
            ServeCommand.self, CreateCommand.self, ListCommand.self, ShowCommand.self, WaitCommand.self,
            SuspendCommand.self, ResumeCommand.self, DeleteCommand.self, EstimateCommand.self,
            ExportCommand.self, UpdateInfoCommand.self, ImportCommand.self, VersionsCommand.self, WebhooksCommand.self,
        ]
    )
}
