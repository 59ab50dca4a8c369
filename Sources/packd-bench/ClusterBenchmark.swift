import ArgumentParser
import Foundation
import Glibc
import PackdTestSupport
import Postgres
import PostgresTestSupport

/// `packd-bench cluster`: release `packd serve` processes in cluster mode on one PostgreSQL
/// (started from a temporary directory, durable as in production).
///
/// 1. Scaling, as issue 30 measured it: a tile server `--latency` ms away behind nginx (TLS,
///    HTTP/2 by default — the `download-wan` setup: nginx in front of a server in this process
///    that answers each tile after the delay), each node held to `--node-transfers` transfers
///    and the cluster's per-host cap out of the way, so each node's own cap binds, not the
///    upstream's. For every node count, the nodes start on a database of their own and run for
///    `--warmup` seconds; then each pack of `--packs` downloads in turn (5,461 is the world at
///    z0–6, any other count a window at z16), from `POST /v1/packs` to `complete`. Rounds
///    rotate the order of the node counts; the table gives medians and ratios to one node.
/// 2. A pack created 1 s after three nodes start: from the POST to the first tile in its
///    progress (target: within 2 s).
/// 3. On loopback without latency: one node in PostgreSQL mode beside SQLite mode (the same
///    binary, the same upstream, in the same run): the cost of a shared database on one box
///    (target: PostgreSQL ≥ 0.5× SQLite's tiles/s).
struct ClusterBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Tiles/s of 1–5 cluster nodes against a tile server 40 ms away; first tile after a start; PostgreSQL vs SQLite mode."
    )

    @Option(help: "Pack sizes in tiles, comma-separated (5461: the world at z0–6; others: a window at z16).") var packs = "5461,50000"
    @Option(help: "Node counts, comma-separated.") var nodes = "1,2,3,5"
    @Option(help: "Rounds over the node counts (their order rotates); medians are reported.") var rounds = 1
    @Option(help: "Bytes of each tile (a real PNG).") var size = 2_048
    @Option(help: "Milliseconds the tile server waits before each answer.") var latency = 40
    @Option(help: "The tile server's front: h2 (nginx, TLS, HTTP/2), http1.1 (nginx, TLS) or plain (no nginx, HTTP/1.1).")
    var upstream = "h2"
    @Option(help: "Each node's transfer cap (--max-transfers).") var nodeTransfers = 16
    @Flag(inversion: .prefixedNo, help: "Hold each node's limit for the tile server at --node-transfers (an upstream rule with adaptive: false) instead of letting it adapt, so each node's own cap binds from the first request.")
    var fixedHostLimit = true
    @Option(help: "Seconds the nodes run before the first pack.") var warmup = 5.0
    @Option(parsing: .upToNextOption, help: "Extra arguments for every packd serve of part 1 and 2 (e.g. --cluster-unit-tiles 1024).")
    var packdArguments: [String] = []
    @Flag(inversion: .prefixedNo, help: "Run part 2: the first tile of a pack created 1 s after three nodes start.") var firstTile = true
    @Flag(inversion: .prefixedNo, help: "Run part 3: the loopback comparison with SQLite mode.") var loopback = true
    @Option(help: "Tiles in the region, for the loopback runs.") var loopbackTiles = 30_000
    @Flag(inversion: .prefixedNo, help: "PostgreSQL with fsync and synchronous commit, as in production.") var durable = true
    @Option(help: "packd log level.") var logLevel = "warning"

    func run() throws {
        let counts = nodes.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        let sizes = packs.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ (1...8).contains($0) }), !sizes.isEmpty, sizes.allSatisfy({ $0 > 0 }),
              rounds >= 1, loopbackTiles > 0, ["h2", "http1.1", "plain"].contains(upstream) else {
            throw ValidationError("--nodes takes counts of 1 to 8, --packs positive tile counts, --rounds at least 1, "
                                  + "--upstream h2, http1.1 or plain")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-cluster-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try TemporaryPostgres.start(.init(durable: durable))
        defer { server.stop() }
        print("\(ProcessInfo.processInfo.activeProcessorCount) cores, load \(DownloadBenchmark.loadAverage()); PostgreSQL "
              + "\(durable ? "durable (fsync on)" : "fsync off") from a temporary directory; tiles of \(size) bytes")

        let tile = PNGTile.make(bytes: size)
        let slow = try DelayedTileUpstream(delay: .milliseconds(latency), tile: tile)
        defer { slow.stop() }
        let authority = try TestCertificateAuthority(directory: directory)
        let front = upstream == "plain" ? nil : try DownloadWANBenchmark.tlsFront(upstream, upstreamPort: slow.port,
                                                                                   authority: authority, directory: directory)
        defer { front?.stop() }
        let template = front.map { "https://127.0.0.1:\($0.port)/t/{z}/{x}/{y}.png" } ?? "http://127.0.0.1:\(slow.port)/t/{z}/{x}/{y}.png"
        let regions = try sizes.map { try Self.region(tiles: $0, template: template) }
        var arguments = ["--allow-upstream-hosts", "127.0.0.1", "--log-level", logLevel, "--cluster-lease", "10s",
                         "--max-transfers", String(nodeTransfers), "--max-transfers-per-host", "10000"]
            + (front == nil ? [] : ["--upstream-ca-file", authority.certificatePath])
        if fixedHostLimit {
            let rules = directory.appendingPathComponent("rules.json")
            let prefix = template.replacingOccurrences(of: "{z}/{x}/{y}.png", with: "")
            try JSONSerialization.data(withJSONObject: ["rules": [["prefix": prefix, "max_transfers": nodeTransfers, "adaptive": false]]])
                .write(to: rules)
            arguments += ["--upstream-rules-file", rules.path]
        }
        arguments += packdArguments

        print("\n1. a tile server \(latency) ms away (\(front == nil ? "HTTP/1.1, no TLS" : "nginx, TLS, \(upstream)")); "
              + "each node --max-transfers \(nodeTransfers)\(fixedHostLimit ? ", its limit for the server fixed there" : "")"
              + "; nodes running \(warmup) s before the packs; \(rounds) round(s)")
        var runs: [Int: [Int: [ClusterNodeGroup.Run]]] = [:]
        for round in 0..<rounds {
            let order = Array(counts[(round % counts.count)...] + counts[..<(round % counts.count)])
            for count in order {
                let url = try server.makeDatabase(prefix: "bench_\(count)_\(round)")
                let group = try ClusterNodeGroup.start(databases: Array(repeating: url.description, count: count),
                                                       postgresData: server.directory + "/data", in: directory,
                                                       logPrefix: "packd-\(count)-\(round)", arguments: arguments)
                defer { group.stop() }
                usleep(useconds_t(warmup * 1_000_000))
                for (size, region) in zip(sizes, regions) {
                    let run = try group.download(region: region, tiles: size, upstream: slow)
                    runs[size, default: [:]][count, default: []].append(run)
                    print(String(format: "%6d tiles  %d node%@  %6.0f tiles/s  (%.2f s; first tile %.2f s; last 10 %% %.2f s; split %@; "
                                 + "upstream peak %d in flight; %d requested twice; CPU µs/tile: %.0f over the nodes, %.0f PostgreSQL)",
                                 size, count, count == 1 ? " " : "s", run.rate, run.seconds, run.firstTileSeconds ?? -1,
                                 run.lastTenthSeconds ?? -1,
                                 run.split.map(String.init).joined(separator: "/"), run.peakInFlight, run.duplicates,
                                 run.cpuMicrosecondsPerTile, run.databaseMicrosecondsPerTile))
                }
            }
        }
        printTable(sizes: sizes, counts: counts, runs: runs)

        if firstTile { try measureFirstTile(server: server, template: template, in: directory, arguments: arguments, upstream: slow) }
        if loopback { try compareWithSQLite(server: server, tile: tile, in: directory) }
    }

    /// 5,461 tiles: the world at z0–6 (issue 30's pack); any other count: a window at z16.
    static func region(tiles: Int, template: String) throws -> [String: Any] {
        if tiles == 5_461 {
            return ["tiles": [template], "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 6]
        }
        let window = try TileWindow(tiles: tiles, zoom: 16)
        return ["tiles": [template], "bounds": window.bounds.geoJSONObject, "min_zoom": 16, "max_zoom": 16]
    }

    private func printTable(sizes: [Int], counts: [Int], runs: [Int: [Int: [ClusterNodeGroup.Run]]]) {
        print("\n| pack | " + counts.map { "\($0) node\($0 == 1 ? "" : "s")" }.joined(separator: " | ") + " |")
        print("|---|" + counts.map { _ in "---|" }.joined())
        for size in sizes {
            let medians = counts.map { count in Self.median(runs[size]?[count]?.map(\.rate) ?? []) }
            let one = counts.firstIndex(of: 1).map { medians[$0] }
            let cells = medians.map { rate -> String in
                guard let one, one > 0 else { return String(format: "%.0f tiles/s", rate) }
                return String(format: "%.0f tiles/s (%.2f×)", rate, rate / one)
            }
            print("| \(size) tiles | " + cells.joined(separator: " | ") + " |")
        }
        print("(medians over the rounds; targets: 3 nodes ≥ 2.7× one for both packs, 5 nodes ≥ 4× for 50,000 tiles)")
    }

    /// Three nodes start together; 1 s later a pack is created: seconds to its first tile.
    private func measureFirstTile(server: TemporaryPostgres, template: String, in directory: URL, arguments: [String],
                                  upstream: DelayedTileUpstream) throws {
        print("\n2. a 5,461-tile pack created 1 s after three nodes start")
        var firsts: [Double] = []
        for round in 0..<rounds {
            let url = try server.makeDatabase(prefix: "bench_first_\(round)")
            let group = try ClusterNodeGroup.start(databases: Array(repeating: url.description, count: 3), postgresData: nil,
                                                   in: directory, logPrefix: "packd-first-\(round)", arguments: arguments)
            defer { group.stop() }
            let due = group.startedAt + .seconds(1)
            if due > .now { usleep(useconds_t(ClusterNodeGroup.seconds(due - .now) * 1_000_000)) }
            let run = try group.download(region: try Self.region(tiles: 5_461, template: template), tiles: 5_461, upstream: upstream)
            firsts.append(run.firstTileSeconds ?? .infinity)
            print(String(format: "first tile after %.2f s, complete after %.2f s (%.0f tiles/s; split %@)", run.firstTileSeconds ?? -1,
                         run.seconds, run.rate, run.split.map(String.init).joined(separator: "/")))
        }
        print(String(format: "median first tile %.2f s   (target <= 2 s)", Self.median(firsts)))
    }

    /// One node on loopback without latency, PostgreSQL mode beside SQLite mode.
    private func compareWithSQLite(server: TemporaryPostgres, tile: [UInt8], in directory: URL) throws {
        let fast = try DelayedTileUpstream(delay: .zero, tile: tile)
        defer { fast.stop() }
        print("\n3. loopback without latency, one node, \(loopbackTiles) tiles, default transfer caps and unit size")
        let region = try Self.region(tiles: loopbackTiles, template: "http://127.0.0.1:\(fast.port)/t/{z}/{x}/{y}.png")
        let common = ["--allow-upstream-hosts", "127.0.0.1", "--log-level", logLevel]
        let sqliteNode = try ClusterNodeGroup.start(databases: [directory.appendingPathComponent("bench.sqlite").path],
                                                    postgresData: nil, in: directory, logPrefix: "sqlite", arguments: common)
        let sqlite = try sqliteNode.download(region: region, tiles: loopbackTiles, upstream: fast)
        sqliteNode.stop()
        let url = try server.makeDatabase(prefix: "bench_loopback")
        let postgresNode = try ClusterNodeGroup.start(databases: [url.description], postgresData: server.directory + "/data",
                                                      in: directory, logPrefix: "loopback", arguments: common)
        defer { postgresNode.stop() }
        usleep(500_000)
        let postgres = try postgresNode.download(region: region, tiles: loopbackTiles, upstream: fast)
        print(String(format: "SQLite mode      %8.0f tiles/s  (%.2f s; CPU %.0f µs/tile)", sqlite.rate, sqlite.seconds,
                     sqlite.cpuMicrosecondsPerTile))
        print(String(format: "PostgreSQL mode  %8.0f tiles/s  (%.2f s; CPU %.0f µs/tile in packd, %.0f in PostgreSQL)", postgres.rate,
                     postgres.seconds, postgres.cpuMicrosecondsPerTile, postgres.databaseMicrosecondsPerTile))
        print(String(format: "PostgreSQL / SQLite: %.2fx   (target >= 0.5x)", postgres.rate / sqlite.rate))
    }

    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
