import ArgumentParser
import CSQLite
import Foundation
import Glibc

/// `packd-bench artifacts`: a pack version's maplibre artifact, built and served by a release
/// `packd serve`, each beside a baseline measured in the same run.
///
/// 1. Building: `HEAD /v1/packs/1/versions/1/export` on an empty artifacts directory (export,
///    SHA-256, fsync, rename) against SQLite's own backup API copying the pack's database (the
///    same rows, page by page) and syncing it — alternated, medians of `--builds` each.
/// 2. Serving, for each of `--modes` (`ArtifactDownloaders`: wrk connections or curl processes,
///    whole file or a `Range` each): `--clients` clients downloading the artifact from packd and
///    from nginx (`sendfile on`) serving the same file (a hard link: the same page cache),
///    alternated for `--rounds` rounds. During every round a second wrk asks packd for
///    `GET /v1/packs/1` (4 connections): its p99 is the API's latency while devices download;
///    packd's resident memory is sampled every 10 ms against its value before the round, and its
///    loop's turns are read from `packd_loop_stall_seconds` before and after.
struct ArtifactsBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "artifacts",
        abstract: "Build a 100,000-tile pack's maplibre artifact (vs sqlite3_backup) and serve it to 64 clients (vs nginx sendfile).")

    @Option(help: "Tiles in the pack.") var tiles = 100_000
    @Option(help: "Approximate uncompressed bytes of one vector tile (4000: an artifact of about 200 MB).") var tileBytes = 4000
    @Option(help: "Share of tiles (0…1) that are the same ocean tile.") var repeatedShare = 0.1
    @Option(help: "Builds (and backups) measured, alternated.") var builds = 3
    @Option(help: "Concurrent downloading clients.") var clients = 64
    @Option(help: "Serving modes, comma-separated: wrk, curl, wrk-range, curl-range.") var modes = "wrk,curl,wrk-range,curl-range"
    @Option(help: "wrk threads for the downloads.") var threads = 2
    @Option(help: "Duration of each wrk serving round (curl rounds last until every client has its file).") var duration = "10s"
    @Option(help: "Serving rounds per server, alternated.") var rounds = 2
    @Option(help: "nginx worker processes (packd serves from one event loop).") var nginxWorkers = 1
    @Option(help: "Directory for the database, artifacts and logs (default: a new temp directory, removed after).") var directory: String?

    func run() throws {
        let folder = self.directory ?? NSTemporaryDirectory() + "packd-artifacts-bench-\(getpid())"
        let directory = URL(fileURLWithPath: folder)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if self.directory == nil { try? FileManager.default.removeItem(at: directory) } }
        let databasePath = folder + "/pack.sqlite"
        let stored = try GeneratedPack(tiles: tiles, tileBytes: tileBytes, repeatedShare: repeatedShare).write(at: databasePath)
        print("pack: \(tiles) tiles, \(stored / 1_000_000) MB of tile bodies stored, in \(folder)")

        let artifacts = folder + "/artifacts"
        let packd = try PackdServeProcess.start(in: directory, database: URL(fileURLWithPath: databasePath),
                                                arguments: ["--artifacts-dir", artifacts, "--log-level", "warning"])
        defer { packd.stop() }
        let versioned = "/v1/packs/1/versions/1/export?format=maplibre"

        // 1. Building.
        var buildSeconds: [Double] = [], backupSeconds: [Double] = []
        var artifactBytes = 0, backupBytes = 0
        for _ in 0..<max(1, builds) {
            let backup = folder + "/backup.sqlite"
            try? FileManager.default.removeItem(atPath: backup)
            var start = DispatchTime.now().uptimeNanoseconds
            try Self.backup(databasePath, to: backup)
            backupSeconds.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            backupBytes = Self.size(backup)
            try? FileManager.default.removeItem(atPath: backup)

            try? FileManager.default.removeItem(atPath: artifacts)
            start = DispatchTime.now().uptimeNanoseconds
            let head = try LoopbackHTTPClient.request(port: packd.port, method: "HEAD", path: versioned)
            buildSeconds.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            guard head.status == 200 else { throw BenchFailure("HEAD \(versioned): \(head.status)") }
            artifactBytes = Self.size(try Self.artifactPath(artifacts))
        }
        let build = Self.median(buildSeconds), copy = Self.median(backupSeconds)
        print("\nbuilding (median of \(buildSeconds.count), alternated)   seconds      MB/s   file MB")
        print(String(format: "maplibre artifact (packd serve)      %9.2f %9.1f %9.1f", build, Double(artifactBytes) / 1e6 / build, Double(artifactBytes) / 1e6))
        print(String(format: "sqlite3_backup of the pack database  %9.2f %9.1f %9.1f", copy, Double(backupBytes) / 1e6 / copy, Double(backupBytes) / 1e6))
        print(String(format: "artifact / backup time: %.2f×", build / copy))

        // 2. Serving.
        let www = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        try FileManager.default.linkItem(atPath: try Self.artifactPath(artifacts), toPath: www.appendingPathComponent("artifact.db").path)
        let nginx = try NginxBaseline.start(in: directory, root: www, workers: nginxWorkers, accessLog: false,
                                            httpDirectives: "sendfile on; tcp_nopush on;")
        defer { nginx.stop() }
        // Warm the page cache once, so neither server pays for the first read.
        _ = try ExportOverHTTP.download(port: nginx.port, target: "/artifact.db")
        print("\nserving a \(String(format: "%.1f", Double(artifactBytes) / 1e6)) MB artifact; load \(DownloadBenchmark.loadAverage()); \(rounds) rounds per server, alternated; medians")
        for mode in modes.split(separator: ",") {
            let downloaders = try ArtifactDownloaders(mode: String(mode), count: clients, threads: threads, duration: duration, size: artifactBytes)
            var results: [String: [Round]] = [:]
            for _ in 0..<max(1, rounds) {
                for (name, url) in [("nginx", "http://127.0.0.1:\(nginx.port)/artifact.db"),
                                    ("packd", "http://127.0.0.1:\(packd.port)\(versioned)")] {
                    results[name, default: []].append(try round(url, packd: packd, downloaders: downloaders, in: directory))
                }
            }
            print("\n\(downloaders.name)            MB/s   × nginx   API p99 ms  packd RSS +MB  packd anon +MB")
            let nginxRate = Self.median(results["nginx"]!.map(\.bytesPerSecond))
            for name in ["nginx", "packd"] {
                let rows = results[name]!
                let rate = Self.median(rows.map(\.bytesPerSecond))
                print(String(format: "%@ %12.0f %9.2f %12.2f %14.1f %15.1f", (name == "nginx" ? "nginx (sendfile on, \(nginxWorkers) worker)" : "packd serve").padding(toLength: 40, withPad: " ", startingAt: 0),
                             rate / 1e6, rate / nginxRate, Self.median(rows.map(\.apiP99)),
                             rows.map(\.rssGrowthMB).max() ?? 0, rows.map(\.anonymousGrowthMB).max() ?? 0))
            }
            print("each round: " + results.map { name, rows in "\(name) " + rows.map { String(format: "%.0f", $0.bytesPerSecond / 1e6) }.joined(separator: "/") + " MB/s" }.sorted().joined(separator: ", "))
            for (index, row) in results["packd"]!.enumerated() {
                if let turns = row.loopTurns { print("packd round \(index + 1), its loop: \(turns.summary)") }
            }
        }
    }

    struct Round {
        let bytesPerSecond: Double
        let apiP99: Double
        let rssGrowthMB: Double
        let anonymousGrowthMB: Double
        /// packd's loop during the round (nil for nginx's rounds).
        let loopTurns: LoopStallReading.Window?
    }

    /// One serving round: the downloads and the API probe at once, packd's memory sampled.
    private func round(_ url: String, packd: PackdServeProcess, downloaders: ArtifactDownloaders, in directory: URL) throws -> Round {
        let pid = packd.process.processIdentifier
        let servedByPackd = url.contains(":\(packd.port)/")
        let rssBefore = PeakMemory.kilobytes("VmRSS:", pid: pid), anonymousBefore = PeakMemory.kilobytes("RssAnon:", pid: pid)
        let rss = AnonymousMemorySampler(pid: pid, field: "VmRSS:"), anonymous = AnonymousMemorySampler(pid: pid)
        let stallsBefore = try LoopStallReading.read(port: packd.port)
        let probe = Wrk(threads: 1, connections: 4, duration: downloaders.client == .curl ? "2s" : duration)
        let api = "http://127.0.0.1:\(packd.port)/v1/packs/1"
        let stop = ProbeStop()
        nonisolated(unsafe) var probed: Result<Double, any Error> = .failure(BenchFailure("the API probe did not run"))
        let done = DispatchSemaphore(value: 0)
        Thread {
            // wrk runs for a fixed time; curl rounds last as long as their downloads, so the probe
            // repeats until they end.
            probed = Result {
                var p99s: [Double] = []
                repeat { p99s.append(try probe.run(api).p99Milliseconds) } while downloaders.client == .curl && !stop.isSet
                return p99s.max() ?? .nan
            }
            done.signal()
        }.start()
        let rate = try downloaders.run(url, directory: directory)
        stop.set()
        done.wait()
        let stalls = try LoopStallReading.read(port: packd.port).since(stallsBefore)
        return Round(bytesPerSecond: rate, apiP99: try probed.get(),
                     rssGrowthMB: Double(rss.stop() - rssBefore) / 1024, anonymousGrowthMB: Double(anonymous.stop() - anonymousBefore) / 1024,
                     loopTurns: servedByPackd ? stalls : nil)
    }

    /// Set once the downloads of a round are over.
    private final class ProbeStop: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }

    /// SQLite's online backup of `source` into a new file, then fsync of that file.
    static func backup(_ source: String, to destination: String) throws {
        var from: OpaquePointer?, to: OpaquePointer?
        guard sqlite3_open_v2(source, &from, SQLITE_OPEN_READONLY, nil) == SQLITE_OK,
              sqlite3_open_v2(destination, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            throw BenchFailure("cannot open the databases for the backup")
        }
        defer {
            sqlite3_close(from)
            sqlite3_close(to)
        }
        guard let backup = sqlite3_backup_init(to, "main", from, "main") else { throw BenchFailure("sqlite3_backup_init failed") }
        let stepped = sqlite3_backup_step(backup, -1)
        sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE else { throw BenchFailure("sqlite3_backup_step: \(stepped)") }
        let descriptor = open(destination, O_RDONLY)
        defer { close(descriptor) }
        fsync(descriptor)
    }

    static func artifactPath(_ artifacts: String) throws -> String {
        let folder = artifacts + "/pack-1/v1"
        guard let name = try FileManager.default.contentsOfDirectory(atPath: folder).first(where: { $0.hasPrefix("maplibre.") }) else {
            throw BenchFailure("no maplibre artifact in \(folder)")
        }
        return folder + "/" + name
    }

    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.intValue ?? 0
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
