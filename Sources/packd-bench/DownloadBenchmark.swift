import ArgumentParser
import CSQLite
import Foundation
import Packs
import Glibc

/// `packd-bench download`: the release `packd serve` downloading a template region of N tiles
/// from nginx on loopback into its SQLite database (done = the pack is `complete`, i.e. every tile
/// is committed), beside `curl --parallel` fetching the same URLs to /dev/null in the same run.
///
/// nginx answers every `/t/{z}/{x}/{y}.pbf` with one file of `--size` incompressible bytes
/// (`try_files`), so no 50,000 files need writing and the page cache serves both clients alike.
/// The region is a bounding box whose cover is exactly the generated tile window.
///
/// `--resume-at K` suspends the pack once K tiles are stored, restarts packd, resumes the pack
/// and reports how long it takes until nginx sees the first new tile request (from nginx's
/// `$msec` access log), then lets the download finish: with `--tiles 1000000 --size 64
/// --resume-at 900000 --no-curl` it is also the flat-memory run of a million tiny tiles.
struct DownloadBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Tiles/s, MB/s and peak RSS of packd downloading a template region beside curl --parallel."
    )

    @Option(help: "Tiles in the region (a window at --zoom whose cover is exactly this many).") var tiles = 50_000
    @Option(help: "Bytes of each tile (incompressible).") var size = 20_480
    @Option(help: "Zoom of the tile window.") var zoom = 16
    @Option(help: "curl --parallel-max.") var parallel = 32
    @Flag(inversion: .prefixedNo, help: "Run the curl baseline.") var curl = true
    @Option(help: "Suspend once this many tiles are stored, restart packd, resume and time the first new request.")
    var resumeAt: Int?
    @Option(help: "Milliseconds between polls of the pack's state.") var pollMilliseconds = 25
    @Option(help: "packd log level.") var logLevel = "warning"
    @Option(help: "Create the database with this SQLite page size before packd opens it (packd's own default: WriterThread.Configuration.defaultPageSize).")
    var pageSize: Int?
    @Option(help: "Keep the work folder (database, logs) here instead of a deleted temporary one.") var keep: String?

    func validate() throws {
        guard tiles > 0, size >= 0, parallel > 0, pollMilliseconds > 0 else {
            throw ValidationError("--tiles, --parallel and --poll-milliseconds must be positive, --size not negative")
        }
        if let resumeAt, !(1..<tiles).contains(resumeAt) {
            throw ValidationError("--resume-at must be between 1 and --tiles - 1")
        }
    }

    func run() throws {
        let directory = keep.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-download-\(getpid())")
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { if keep == nil { try? FileManager.default.removeItem(at: directory) } }
        try Self.incompressibleBytes(size).write(to: root.appendingPathComponent("tile.bin"))
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: 1, accessLog: resumeAt != nil,
                                            timedAccessLog: true,
                                            locations: "location /t/ { try_files /tile.bin =404; }")
        defer { nginx.stop() }
        let template = "http://127.0.0.1:\(nginx.port)/t/{z}/{x}/{y}.pbf"
        let window = try TileWindow(tiles: tiles, zoom: zoom)
        let megabytes = Double(tiles) * Double(size) / 1_048_576
        print("\(tiles) tiles of \(size) bytes at z\(zoom) (x \(window.xRange), y \(window.yRange)), nginx on 127.0.0.1, \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(Self.loadAverage())")

        var curlSeconds: Double?
        if curl {
            let cpuBefore = Self.childrenCPUSeconds()
            let seconds = try CurlParallel.seconds(urls: window.urls(template: template), maximum: parallel, arguments: ["--fail"],
                                                  directory: directory)
            curlSeconds = seconds
            print(String(format: "curl --parallel-max %d  %9.0f tiles/s  %8.1f MB/s  (%.2f s, to /dev/null; CPU %.0f µs/tile)",
                         parallel, Double(tiles) / seconds, megabytes / seconds, seconds,
                         (Self.childrenCPUSeconds() - cpuBefore) / Double(tiles) * 1e6))
        }

        let database = directory.appendingPathComponent("bench.sqlite")
        try? FileManager.default.removeItem(at: database)
        if let pageSize { try Self.createEmptyDatabase(at: database.path, pageSize: pageSize) }
        let arguments = ["--allow-upstream-hosts", "127.0.0.1", "--log-level", logLevel]
        var packd = try PackdServeProcess.start(in: directory, database: database, arguments: arguments)
        defer { packd.stop() }
        let region: [String: Any] = [
            "tiles": [template], "bounds": window.bounds.geoJSONObject, "min_zoom": zoom, "max_zoom": zoom,
        ]
        let start = Date().timeIntervalSince1970
        let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs",
                                                     json: ["region": region, "name": "bench"])
        guard created.status == 201, let packID = try created.json()["id"] as? Int else {
            throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
        }
        var peaks: [Int] = []
        var cpu = 0.0
        var downloadSeconds: Double

        if let resumeAt {
            _ = try waitForPack(packd, packID) { $0.progress.completedTiles >= resumeAt || !$0.state.isScheduled }
            let suspendedAt = Date().timeIntervalSince1970
            _ = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs/\(packID)/suspend")
            let suspended = try waitForPack(packd, packID) { !$0.state.isScheduled }
            peaks.append(packd.peakResidentBytes ?? 0)
            cpu += packd.cpuSeconds ?? 0
            packd.stop()
            downloadSeconds = suspendedAt - start
            print(String(format: "packd (first run)     suspended with %d of %d tiles stored after %.2f s, peak RSS %.1f MiB",
                         suspended.progress.completedTiles, tiles, downloadSeconds, Double(peaks[0]) / 1_048_576))
            let logOffset = Self.fileSize(directory.appendingPathComponent("nginx-access.log"))
            packd = try PackdServeProcess.start(in: directory, database: database, logName: "packd-resumed.log",
                                                arguments: arguments)
            let resumedAt = Date().timeIntervalSince1970
            let resumed = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs/\(packID)/resume")
            guard resumed.status == 200 else { throw ValidationError("resume answered \(resumed.status)") }
            let firstRequest = try waitForFirstRequest(log: directory.appendingPathComponent("nginx-access.log"),
                                                       after: logOffset)
            print(String(format: "resume: first new tile request %.3f s after POST resume (%.3f s after packd was launched)",
                         firstRequest - resumedAt, firstRequest - packd.launchedAt))
            let done = try waitForPack(packd, packID) { !$0.state.isScheduled }
            downloadSeconds += Date().timeIntervalSince1970 - resumedAt
            peaks.append(packd.peakResidentBytes ?? 0)
            cpu += packd.cpuSeconds ?? 0
            try report(done, seconds: downloadSeconds, megabytes: megabytes, curlSeconds: curlSeconds, peaks: peaks, cpu: cpu)
        } else {
            let done = try waitForPack(packd, packID) { !$0.state.isScheduled }
            downloadSeconds = Date().timeIntervalSince1970 - start
            peaks.append(packd.peakResidentBytes ?? 0)
            cpu += packd.cpuSeconds ?? 0
            try report(done, seconds: downloadSeconds, megabytes: megabytes, curlSeconds: curlSeconds, peaks: peaks, cpu: cpu)
        }
    }

    private func report(_ pack: Pack, seconds: Double, megabytes: Double, curlSeconds: Double?, peaks: [Int],
                        cpu: Double) throws {
        guard pack.state == .complete, pack.progress.completedTiles == tiles else {
            throw ValidationError("the pack ended \(pack.state) with \(pack.progress.completedTiles) of \(tiles) tiles stored")
        }
        let peak = Double(peaks.max() ?? 0) / 1_048_576
        print(String(format: "packd (stored, committed) %9.0f tiles/s  %8.1f MB/s  (%.2f s, POST to complete%@; CPU %.0f µs/tile)",
                     Double(tiles) / seconds, megabytes / seconds, seconds, peaks.count > 1 ? ", both runs" : "",
                     cpu / Double(tiles) * 1e6))
        if let curlSeconds {
            print(String(format: "ratio packd/curl: %.2f   (target >= 0.60, >= 5000 tiles/s)", curlSeconds / seconds))
        }
        print(String(format: "packd peak RSS (VmHWM): %.1f MiB   (target < 100 MiB for 50k x 20 KiB, < 128 MiB for 1M tiny)", peak))
    }

    private func waitForPack(_ packd: PackdServeProcess, _ id: Int, until done: (Pack) -> Bool) throws -> Pack {
        try Self.waitForPack(packd, id, pollMilliseconds: pollMilliseconds, until: done)
    }

    /// Polls `GET /v1/packs/{id}` every `pollMilliseconds` until `done` holds.
    static func waitForPack(_ packd: PackdServeProcess, _ id: Int, pollMilliseconds: Int,
                            until done: (Pack) -> Bool) throws -> Pack {
        while true {
            guard packd.process.isRunning else { throw ValidationError("packd exited during the download") }
            let response = try LoopbackHTTPClient.request(port: packd.port, method: "GET", path: "/v1/packs/\(id)")
            let pack = try response.pack()
            if done(pack) { return pack }
            usleep(useconds_t(pollMilliseconds * 1000))
        }
    }

    /// The `$msec` of the first access-log line written after `offset` (nginx logs unbuffered).
    private func waitForFirstRequest(log: URL, after offset: Int) throws -> Double {
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            if let handle = try? FileHandle(forReadingFrom: log) {
                defer { try? handle.close() }
                try handle.seek(toOffset: UInt64(offset))
                let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
                if let line = text.split(separator: "\n").first, text.contains("\n"),
                   let stamp = line.split(separator: " ").first.flatMap({ Double($0) }) {
                    return stamp
                }
            }
            usleep(2_000)
        }
        throw ValidationError("no tile request within 120 s of resuming")
    }

    /// Bytes from a 64-bit LCG's high bits: random-looking to deflate and to the entropy check.
    static func incompressibleBytes(_ count: Int) -> Data {
        var seed: UInt64 = 0x1234_5678
        return Data((0..<count).map { _ in
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seed >> 33)
        })
    }

    /// An empty database file whose header fixes `pageSize` (and incremental auto-vacuum, as packd
    /// would set): packd then migrates it as a new database.
    static func createEmptyDatabase(at path: String, pageSize: Int) throws {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        guard sqlite3_open(path, &db) == SQLITE_OK,
              sqlite3_exec(db, "PRAGMA page_size = \(pageSize); PRAGMA auto_vacuum = INCREMENTAL; VACUUM;", nil, nil, nil) == SQLITE_OK
        else { throw ValidationError("cannot create \(path) with page size \(pageSize)") }
    }

    /// CPU seconds of waited-for children (curl), from getrusage.
    static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func fileSize(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int) ?? 0
    }

    static func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    }
}
