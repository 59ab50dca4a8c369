import ArgumentParser

/// The packd executable: a map-region download service. `serve` runs the HTTP API.
@main
struct Packd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "packd",
        abstract: "Downloads map regions into MapLibre offline databases and serves them over HTTP.",
        subcommands: [ServeCommand.self, ExportCommand.self, ImportCommand.self]
    )
}
