import ArgumentParser
import Foundation
import Packs

/// `packd create`: a pack from region flags (`POST /v1/packs`), and with `--wait` followed to its
/// end like `packd wait`.
struct CreateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a pack on a running packd, and with --wait follow it to its end.",
        discussion: """
            Without --wait it prints the new pack. With --wait the exit status says how the pack \
            ended: 0 complete, 1 failed (or deleted); a terminal gets a progress bar, anything else \
            one JSON object per event.
            """)

    /// A context file is read up to this size; the server decides what it accepts.
    static let maximumContextFileBytes = 1 << 20

    @OptionGroup var connection: ServerConnectionOptions
    @OptionGroup(title: "Region") var region: RegionOptions
    @Option(help: "The pack's name (searchable with list --query).") var name: String?
    @Option(help: ArgumentHelp("A file whose bytes are the pack's opaque context.", valueName: "file")) var contextFile: String?
    @Flag(inversion: .prefixedNo, help: "Start downloading at once (--no-start: an inactive pack).") var start = true
    @Option(help: "The most tiles this pack may download.") var maxTiles: Int64?
    @Option(help: "A rolling-average bandwidth cap in bytes per second.") var maxBytesPerSecond: Int64?
    @Option(help: ArgumentHelp("Revalidate the pack on this schedule, an ISO 8601 duration of at least an hour (P7D, PT12H).",
                               valueName: "duration")) var refresh: String?
    // `.unconditional`: a western longitude is negative, and must not read as a flag.
    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Download the tiles around this place first: every zoom within RADIUS_M metres (default 5000) before the rest.",
        valueName: "lon,lat[,radius_m]"))
    var startArea: String?
    @Flag(help: "Follow the pack until it is complete (exit 0) or fails (exit 1).") var wait = false
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard !(wait && !start) else { throw ValidationError("--wait would never end with --no-start") }
        if let startArea { _ = try Self.startArea(startArea) }
    }

    /// `LON,LAT` or `LON,LAT,RADIUS_M`.
    static func startArea(_ text: String) throws -> StartArea {
        let numbers = text.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard (2...3).contains(numbers.count), numbers.allSatisfy({ $0?.isFinite == true }) else {
            throw ValidationError("--start-area must be LON,LAT or LON,LAT,RADIUS_M, e.g. 8.54,47.37,5000")
        }
        let values = numbers.compactMap { $0 }
        return StartArea(longitude: values[0], latitude: values[1], radiusM: values.count == 3 ? values[2] : StartArea.defaultRadius)
    }

    func run() throws {
        let code = try ClientExit.run("create") { () throws(ClientFailure) -> Int32 in
            let client = try connection.client()
            let limits = maxTiles != nil || maxBytesPerSecond != nil ? PackLimits(maxTiles: maxTiles, maxBytesPerSecond: maxBytesPerSecond) : nil
            let area = try startArea.map { text throws(ClientFailure) in
                do { return try Self.startArea(text) } catch { throw .invalidInput("\(error)") }
            }
            let creation = PackCreation(region: try region.region(), settings: .init(
                context: try contextFile.map(Self.context), name: name, start: start ? nil : false, limits: limits,
                refresh: refresh.map(PackRefresh.init), startArea: area))
            let pack = try client.send(Pack.self, "POST", "/v1/packs", json: creation)
            if output.forPerson {
                Terminal.standardOutput("created pack \(pack.id)" + (pack.name.map { " \"\($0)\"" } ?? "") + " (\(pack.state.rawValue))\n")
            } else if !wait {
                PackText.printJSON(pack)
            }
            guard wait else { return ClientExit.success }
            return try PackWait(client: client, packID: pack.id, forPerson: output.forPerson, command: "create").run()
        }
        if code != ClientExit.success { throw ExitCode(code) }
    }

    private static func context(_ path: String) throws(ClientFailure) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .invalidInput("cannot read the context file \(path): \(String(cString: strerror(errno)))")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumContextFileBytes + 1)) ?? Data()
        guard data.count <= maximumContextFileBytes else {
            throw .invalidInput("the context file \(path) is larger than \(maximumContextFileBytes >> 20) MiB")
        }
        return Array(data)
    }
}

/// `packd estimate`: what a region would download (`POST /v1/estimates`), before creating it.
struct EstimateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "estimate", abstract: "Count what a region would download: tiles per source and zoom, other resources, bytes when known.")

    @OptionGroup var connection: ServerConnectionOptions
    @OptionGroup(title: "Region") var region: RegionOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        try ClientExit.run("estimate") {
            let estimate = try connection.client().send(Estimate.self, "POST", "/v1/estimates", json: EstimateRequest(region: try region.region()))
            if output.forPerson {
                Terminal.standardOutput(Self.text(estimate))
            } else {
                PackText.printJSON(estimate)
            }
        }
    }

    /// Per source its zooms' tile counts, then the totals.
    static func text(_ estimate: Estimate) -> String {
        var lines: [String] = []
        for source in estimate.sources {
            lines.append("\(source.source) (\(source.type), \(source.tileSize) px): \(HumanUnits.count(source.tiles)) tiles, zooms \(source.minZoom)-\(source.maxZoom)")
            for zoom in source.zooms {
                lines.append("  z\(zoom.zoom)".padding(toLength: 7, withPad: " ", startingAt: 0)
                             + HumanUnits.count(zoom.tiles) + (zoom.exact ? "" : " (extrapolated)"))
            }
        }
        let resources = estimate.resources
        let other = resources.styles + resources.tilejsons + resources.sprites + resources.glyphs + resources.data
        lines.append("tiles      \(HumanUnits.count(estimate.tiles))" + (estimate.exact ? "" : " (some zooms extrapolated)"))
        lines.append("other      \(HumanUnits.count(other)) (styles \(resources.styles), TileJSONs \(resources.tilejsons), sprites \(resources.sprites), glyphs \(resources.glyphs), data \(resources.data))")
        lines.append("expected   \(HumanUnits.count(estimate.expectedResources)) resources")
        if let bytes = estimate.estimatedBytes {
            lines.append("size       about \(HumanUnits.bytes(bytes)) (from \(HumanUnits.count(estimate.sampledTiles)) stored tiles of the same sources)")
        } else {
            lines.append("size       unknown (no tile of these sources is stored yet)")
        }
        if let limit = estimate.tileLimit {
            lines.append("tile limit \(HumanUnits.count(limit))" + (estimate.withinTileLimit ? "" : ": exceeded, the pack would fail"))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
