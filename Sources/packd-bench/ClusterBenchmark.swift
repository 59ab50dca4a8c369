import ArgumentParser
import Foundation
import Glibc
import Packs
import Postgres
import PostgresTestSupport

/// `packd-bench cluster`: release `packd serve` processes in cluster mode on one PostgreSQL
/// (started from a temporary directory, durable as in production), downloading one template
/// region of `--tiles` tiles.
///
/// 1. Against an upstream that answers every tile after `--latency` (a tile server across a WAN):
///    1, 2 and 3 nodes, aggregate tiles/s from `POST /v1/packs` to `complete`. Each node's own
///    transfer cap (`--max-transfers`) binds there, not the 2 cores: the cluster-wide per-host cap
///    is set out of the way, so nodes add up (target: 3 nodes ≥ 2.5× one).
/// 2. On loopback without latency: one node in PostgreSQL mode beside SQLite mode (the same
///    binary, the same upstream, in the same run): the cost of a shared database on one box
///    (target: PostgreSQL ≥ 0.5× SQLite's tiles/s).
struct ClusterBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Aggregate tiles/s of 1, 2 and 3 cluster nodes against a slow upstream; PostgreSQL vs SQLite mode on loopback."
    )

    @Option(help: "Tiles in the region, for the runs against the slow upstream.") var tiles = 12_000
    @Option(help: "Tiles in the region, for the loopback runs.") var loopbackTiles = 30_000
    @Option(help: "Bytes of each tile.") var size = 2_048
    @Option(help: "Milliseconds the slow upstream waits before each answer.") var latency = 40
    @Option(help: "Each node's transfer cap (--max-transfers) against the slow upstream.") var nodeTransfers = 16
    @Option(help: "Node counts to run against the slow upstream, comma-separated.") var nodes = "1,2,3"
    @Option(help: "Tiles per work unit (--cluster-unit-tiles) against the slow upstream; loopback runs packd's default.")
    var unitTiles = 500
    @Flag(inversion: .prefixedNo, help: "Run the loopback comparison with SQLite mode.") var loopback = true
    @Flag(inversion: .prefixedNo, help: "PostgreSQL with fsync and synchronous commit, as in production.") var durable = true
    @Option(help: "packd log level.") var logLevel = "warning"

    func run() throws {
        let counts = nodes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ (1...8).contains($0) }), tiles > 0, loopbackTiles > 0 else {
            throw ValidationError("--nodes takes counts of 1 to 8; --tiles and --loopback-tiles must be positive")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-cluster-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try TemporaryPostgres.start(.init(durable: durable))
        defer { server.stop() }
        print("\(ProcessInfo.processInfo.activeProcessorCount) cores, load \(DownloadBenchmark.loadAverage()); PostgreSQL "
              + "\(durable ? "durable (fsync on)" : "fsync off") from a temporary directory; tiles of \(size) bytes")

        let tile = [UInt8](DownloadBenchmark.incompressibleBytes(size))
        let slow = try DelayedTileUpstream(delay: .milliseconds(latency), tile: tile)
        defer { slow.stop() }
        print("\n1. upstream answering each tile after \(latency) ms; each node --max-transfers \(nodeTransfers); "
              + "\(tiles) tiles, units of \(unitTiles)")
        var rates: [Int: Double] = [:]
        for count in counts {
            let url = try server.makeDatabase(prefix: "bench_nodes_\(count)")
            let run = try timedDownload(tiles: tiles, upstream: slow, in: directory, databases: Array(repeating: url.description, count: count),
                                        postgresData: server.directory + "/data",
                                        arguments: ["--max-transfers", String(nodeTransfers), "--max-transfers-per-host", "10000",
                                                    "--cluster-unit-tiles", String(unitTiles)])
            rates[count] = run.rate
            print(String(format: "%d node%@  %8.0f tiles/s  (%.2f s; split %@; upstream peak %d in flight; CPU µs/tile: "
                         + "%.0f over the nodes, %.0f PostgreSQL)",
                         count, count == 1 ? " " : "s", run.rate, run.seconds, run.split.map(String.init).joined(separator: "/"),
                         run.peakInFlight, run.cpuMicrosecondsPerTile, run.databaseMicrosecondsPerTile))
        }
        if let one = rates[1] {
            for count in counts where count > 1 {
                print(String(format: "%d nodes / 1 node: %.2fx%@", count, (rates[count] ?? 0) / one, count == 3 ? "   (target >= 2.5x)" : ""))
            }
        }

        guard loopback else { return }
        let fast = try DelayedTileUpstream(delay: .zero, tile: tile)
        defer { fast.stop() }
        print("\n2. loopback without latency, one node, \(loopbackTiles) tiles, default transfer caps and unit size")
        let sqlite = try timedDownload(tiles: loopbackTiles, upstream: fast, in: directory,
                                       databases: [directory.appendingPathComponent("bench.sqlite").path], arguments: [])
        let url = try server.makeDatabase(prefix: "bench_loopback")
        let postgres = try timedDownload(tiles: loopbackTiles, upstream: fast, in: directory, databases: [url.description],
                                         postgresData: server.directory + "/data", arguments: [])
        print(String(format: "SQLite mode      %8.0f tiles/s  (%.2f s; CPU %.0f µs/tile)", sqlite.rate, sqlite.seconds,
                     sqlite.cpuMicrosecondsPerTile))
        print(String(format: "PostgreSQL mode  %8.0f tiles/s  (%.2f s; CPU %.0f µs/tile in packd, %.0f in PostgreSQL)", postgres.rate,
                     postgres.seconds, postgres.cpuMicrosecondsPerTile, postgres.databaseMicrosecondsPerTile))
        print(String(format: "PostgreSQL / SQLite: %.2fx   (target >= 0.5x)", postgres.rate / sqlite.rate))
    }

    struct Run {
        var seconds: Double
        var rate: Double
        var split: [Int]
        var cpuMicrosecondsPerTile: Double
        /// The PostgreSQL server's CPU per tile (0 in SQLite mode).
        var databaseMicrosecondsPerTile: Double
        /// The most requests the upstream had in flight at once.
        var peakInFlight: Int
    }

    /// Starts a node per entry of `databases`, lets cluster nodes settle into their shares,
    /// downloads a template region of `tiles` tiles from the upstream on `port`, and stops them.
    /// `postgresData`: the server's data directory, to count its CPU.
    private func timedDownload(tiles: Int, upstream: DelayedTileUpstream, in directory: URL, databases: [String],
                               postgresData: String? = nil, arguments: [String]) throws -> Run {
        let clustered = databases.first.map(PostgresURL.looksLikeURL) ?? false
        let lease = 4.0
        let common = ["--allow-upstream-hosts", "127.0.0.1", "--log-level", logLevel]
            + (clustered ? ["--cluster-lease", "\(Int(lease))s"] : []) + arguments
        var processes: [PackdServeProcess] = []
        defer { for process in processes { process.stop() } }
        for (index, database) in databases.enumerated() {
            processes.append(try PackdServeProcess.start(in: directory, databaseArgument: database,
                                                         logName: "packd-\(databases.count)-\(index).log", arguments: common))
        }
        if clustered {
            // A node takes a share of the cluster's per-host allowances once every other node can
            // have seen it: two heartbeats (`LeaseTiming.settling`) after it registered.
            usleep(useconds_t((lease / 4 * 2 + 0.5) * 1_000_000))
        }
        let zoom = 16
        let window = try TileWindow(tiles: tiles, zoom: zoom)
        let region: [String: Any] = [
            "tiles": ["http://127.0.0.1:\(upstream.port)/t/{z}/{x}/{y}.png"], "bounds": window.bounds.geoJSONObject,
            "min_zoom": zoom, "max_zoom": zoom,
        ]
        let cpuBefore = processes.map { $0.cpuSeconds ?? 0 }
        let databaseCPU = { postgresData.map { ProcessCPU.postgresSeconds(dataDirectory: $0) } ?? 0 }
        let databaseBefore = databaseCPU()
        _ = upstream.takePeakInFlight()
        let start = Date().timeIntervalSince1970
        let created = try LoopbackHTTPClient.request(port: processes[0].port, method: "POST", path: "/v1/packs",
                                                     json: ["region": region, "name": "bench", "start": true])
        guard created.status == 201, let id = try created.json()["id"] as? Int else {
            throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
        }
        while true {
            guard processes.allSatisfy(\.process.isRunning) else { throw ValidationError("a packd exited during the download") }
            let pack = try LoopbackHTTPClient.request(port: processes[0].port, method: "GET", path: "/v1/packs/\(id)").pack()
            if !pack.state.isScheduled {
                guard pack.state == .complete, pack.progress.completedTiles == tiles else {
                    throw ValidationError("the pack ended \(pack.state) with \(pack.progress.completedTiles) of \(tiles) tiles")
                }
                break
            }
            usleep(20_000)
        }
        let seconds = Date().timeIntervalSince1970 - start
        let cpu = zip(processes, cpuBefore).reduce(0.0) { $0 + ($1.0.cpuSeconds ?? 0) - $1.1 }
        let database = databaseCPU() - databaseBefore
        let split = try processes.map { process -> Int in
            let text = String(decoding: try LoopbackHTTPClient.request(port: process.port, method: "GET", path: "/metrics").body,
                              as: UTF8.self)
            let line = text.split(separator: "\n").first { $0.hasPrefix("packd_downloaded_resources_total ") }
            return line.flatMap { Double($0.split(separator: " ")[1]) }.map { Int($0) } ?? 0
        }
        return Run(seconds: seconds, rate: Double(tiles) / seconds, split: split, cpuMicrosecondsPerTile: cpu / Double(tiles) * 1e6,
                   databaseMicrosecondsPerTile: database / Double(tiles) * 1e6,
                   peakInFlight: upstream.takePeakInFlight())
    }
}
