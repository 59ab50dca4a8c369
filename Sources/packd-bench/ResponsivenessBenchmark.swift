import ArgumentParser
import Foundation
import Glibc

/// `packd-bench responsiveness`: how long one client polling `GET /v1/packs/{id}` 20 times a
/// second waits for its answers while packd works hard on the same loop — a release `packd serve`,
/// and beside it in the same run an earlier build (`--baseline-packd`) doing the same:
///
/// 1. downloading a `--tiles`-tile template pack from nginx on loopback (tiny tiles, so the
///    download runs at the storage's pace for a long time and the pack's rows grow to millions),
///    polled until it is complete;
/// 2. building the maplibre artifact of another pack of about `--artifact-megabytes` (generated
///    into the database before packd starts) while the first pack is polled.
///
/// For each: polls, p50, p99 and the longest answer; for a packd that has it, its loop's turns
/// during the phase from `packd_loop_stall_seconds` (how many, the longest bucket, how many over
/// 1 ms and 5 ms).
struct ResponsivenessBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "responsiveness",
        abstract: "GET /v1/packs/{id} at 20 Hz while a 1,000,000-tile pack downloads and while a 1 GB artifact builds; the loop's stalls.")

    @Option(help: "Tiles of the downloaded pack.") var tiles = 1_000_000
    @Option(help: "Bytes of each downloaded tile.") var tileSize = 100
    @Option(help: "Approximate size of the generated pack's maplibre artifact.") var artifactMegabytes = 1000
    @Option(help: "Polls a second.") var pollRate = 20.0
    @Option(help: "An earlier packd (e.g. /work/baseline/.build/release/packd) run through the same phases first.") var baselinePackd: String?
    @Option(help: "Keep the work folder here instead of a deleted temporary one.") var keep: String?

    func run() throws {
        let directory = keep.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-responsiveness-\(getpid())")
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { if keep == nil { try? FileManager.default.removeItem(at: directory) } }
        try DownloadBenchmark.incompressibleBytes(tileSize).write(to: root.appendingPathComponent("tile.bin"))
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: 1, accessLog: false,
                                            locations: "location /t/ { try_files /tile.bin =404; }")
        defer { nginx.stop() }
        let window = try TileWindow(tiles: tiles, zoom: 16)
        // About 4,300 bytes of artifact a generated tile of 4,000 uncompressed bytes.
        let artifactTiles = max(1000, artifactMegabytes * 1_000_000 / 4300)
        print("\(tiles) tiles of \(tileSize) bytes from nginx on 127.0.0.1; an artifact of \(artifactTiles) generated tiles; polls at \(pollRate)/s; \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(DownloadBenchmark.loadAverage())")
        let template = "http://127.0.0.1:\(nginx.port)/t/{z}/{x}/{y}.pbf"
        let region: [String: Any] = ["tiles": [template], "bounds": window.bounds.geoJSONObject, "min_zoom": 16, "max_zoom": 16]
        var runs: [(String, URL?)] = []
        if let baselinePackd { runs.append(("baseline", URL(fileURLWithPath: baselinePackd))) }
        runs.append(("packd", nil))
        for (name, executable) in runs {
            let folder = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let database = folder.appendingPathComponent("packd.sqlite")
            _ = try GeneratedPack(tiles: artifactTiles, tileBytes: 4000, repeatedShare: 0.1).write(at: database.path)
            let packd = try PackdServeProcess.start(in: folder, database: database, arguments: [
                "--allow-upstream-hosts", "127.0.0.1", "--log-level", "warning", "--artifacts-dir", folder.appendingPathComponent("artifacts").path,
            ], executable: executable)
            defer { packd.stop() }
            print("\n\(name)\(executable.map { " (\($0.path))" } ?? "")")

            // 1. A big download, polled.
            let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs",
                                                         json: ["region": region, "name": "polled"])
            guard created.status == 201, let packID = try created.json()["id"] as? Int else {
                throw ValidationError("POST /v1/packs answered \(created.status)")
            }
            var stalls = try? LoopStallReading.read(port: packd.port)
            var poller = PackPoller(port: packd.port, packID: packID, perSecond: pollRate)
            let start = Date()
            while true {
                let pack = try LoopbackHTTPClient.request(port: packd.port, method: "GET", path: "/v1/packs/\(packID)").pack()
                if !pack.state.isScheduled {
                    guard pack.state == .complete else { throw ValidationError("the polled pack ended \(pack.state)") }
                    break
                }
                usleep(500_000)
            }
            let downloading = LatencySummary(try poller.stop())
            print(String(format: "downloading %d tiles (%.1f s):   ", tiles, Date().timeIntervalSince(start)) + downloading.text)
            if let before = stalls, let after = try? LoopStallReading.read(port: packd.port) {
                print("  its loop: \(after.since(before).summary)")
            }

            // 2. Another pack's artifact built, the first one polled.
            stalls = try? LoopStallReading.read(port: packd.port)
            poller = PackPoller(port: packd.port, packID: packID, perSecond: pollRate)
            let building = Date()
            let head = try LoopbackHTTPClient.request(port: packd.port, method: "HEAD", path: "/v1/packs/1/versions/1/export?format=maplibre")
            guard head.status == 200 else { throw ValidationError("building the artifact answered \(head.status)") }
            let built = LatencySummary(try poller.stop())
            let size = ArtifactsBenchmark.size(try ArtifactsBenchmark.artifactPath(folder.appendingPathComponent("artifacts").path))
            print(String(format: "building a %.0f MB artifact (%.1f s): ", Double(size) / 1e6, Date().timeIntervalSince(building)) + built.text)
            if let before = stalls, let after = try? LoopStallReading.read(port: packd.port) {
                print("  its loop: \(after.since(before).summary)")
            }
        }
        print("\ntarget: p99 < 5 ms in both phases; no loop turn over 5 ms")
    }
}
