import ArgumentParser
import Foundation
import Packs
import Glibc

/// `packd-bench api`: the REST API under load on a release `packd serve`.
///
/// 1. wrk on `GET /v1/packs/{id}` with nothing else running, beside nginx serving the same JSON
///    document as a static file in the same run (the ratio is the result, not the absolute).
/// 2. The same wrk while a download runs at full speed in the same process, from nginx serving a
///    generated tile set (one small tile body for every tile URL): p99 must stay under 10 ms, and
///    the download's tiles/s with and without the load are printed.
/// 3. The resident memory 1,000 open SSE streams cost packd (RSS delta): under 50 MiB.
struct APIBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "GET /v1/packs/{id} req/s and p99, idle and during a download, beside nginx; RSS of 1,000 SSE streams."
    )

    @Option(help: "wrk duration.") var duration = "10s"
    @Option(help: "wrk connections.") var connections = 64
    @Option(help: "wrk threads.") var threads = 2
    @Option(help: "Event streams opened for the memory measurement.") var subscribers = 1000
    @Option(help: "Highest zoom of the download (over 40° x 40°; z12 is about 200,000 tiles).") var downloadMaxZoom = 12
    @Option(help: "Bytes of the download's tile body (20480: the storage-bound case).") var tileSize = 600

    func run() throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = min(max(limit.rlim_cur, rlim_t(subscribers * 2 + 512)), limit.rlim_max)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-api-\(getpid())")
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: 1, accessLog: false,
                                            locations: "location / { } location /tiles/ { default_type application/x-protobuf; try_files /tile.pbf =404; }")
        defer { nginx.stop() }
        let upstream = "http://127.0.0.1:\(nginx.port)"
        try Data(#"{"version": 8, "sources": {"v": {"type": "vector", "url": "\#(upstream)/tiles.json"}}, "layers": [{"id": "l", "type": "fill", "source": "v", "source-layer": "x"}]}"#.utf8)
            .write(to: root.appendingPathComponent("style.json"))
        try Data(#"{"tilejson": "3.0.0", "tiles": ["\#(upstream)/tiles/{z}/{x}/{y}.pbf"], "minzoom": 0, "maxzoom": 14}"#.utf8)
            .write(to: root.appendingPathComponent("tiles.json"))
        try DownloadBenchmark.incompressibleBytes(tileSize).write(to: root.appendingPathComponent("tile.pbf"))

        let packd = try PackdProcess.start(in: directory, arguments: ["--allow-upstream-hosts", "127.0.0.1", "--log-level", "warning"])
        defer { packd.stop() }
        let api = "http://127.0.0.1:\(packd.port)"
        let port = packd.port
        print("load before: \(Self.uptime())")
        print("wrk -t\(threads) -c\(connections) -d\(duration) --latency; packd log level warning (no access log), nginx 1 worker, no access log")

        // 1. Idle.
        let idle = try Self.request(port, "POST", "/v1/packs", json: ["name": "idle", "start": false, "region": [
            "style_url": "\(upstream)/style.json", "bounds": [-1, -1, 1, 1], "min_zoom": 0, "max_zoom": 1,
        ] as [String: Any]])
        guard let idleID = idle["id"] as? Int else { throw ValidationError("creating the idle pack failed: \(idle)") }
        let document = try Self.fetch(port, "/v1/packs/\(idleID)")
        try document.write(to: root.appendingPathComponent("pack.json"))
        let target = "\(api)/v1/packs/\(idleID)"
        let packdIdle = try runWrk(target)
        let nginxIdle = try runWrk("\(upstream)/pack.json")
        print(String(format: "idle      packd GET /v1/packs/{id} %9.0f req/s  p99 %6.2f ms   (target >= 30000 req/s)", packdIdle.rps, packdIdle.p99))
        print(String(format: "idle      nginx same JSON file    %9.0f req/s  p99 %6.2f ms   ratio packd/nginx %.2f",
                     nginxIdle.rps, nginxIdle.p99, packdIdle.rps / nginxIdle.rps))

        // 2. During a download at full speed.
        let download = try Self.request(port, "POST", "/v1/packs", json: ["name": "load", "start": true, "region": [
            "style_url": "\(upstream)/style.json", "bounds": [-20, -20, 20, 20], "min_zoom": 0, "max_zoom": downloadMaxZoom,
        ] as [String: Any]])
        guard let downloadID = download["id"] as? Int else { throw ValidationError("creating the download failed: \(download)") }
        let packPath = "/v1/packs/\(downloadID)"
        var before = try Self.tiles(port, packPath)
        let deadline = Date().addingTimeInterval(60)
        while before.tiles < 1000 && Date() < deadline {
            usleep(100_000)
            before = try Self.tiles(port, packPath)
        }
        let alone = try measureRate(port, packPath, seconds: 5)
        let start = try Self.tiles(port, packPath)
        let began = Date()
        let busy = try runWrk(target)
        let end = try Self.tiles(port, packPath)
        let loaded = Double(end.tiles - start.tiles) / Date().timeIntervalSince(began)
        print(String(format: "download  packd GET /v1/packs/{id} %9.0f req/s  p99 %6.2f ms   (target p99 < 10 ms)", busy.rps, busy.p99))
        print(String(format: "download  %.0f tiles/s alone, %.0f tiles/s under wrk; state after wrk: %@ (%lld tiles stored)",
                     alone, loaded, end.state.rawValue, end.tiles))
        if end.state != .active { print("warning: the download was not active for the whole measurement") }
        _ = try LoopbackHTTPClient.request(port: port, method: "DELETE", path: packPath)

        // 3. Memory of open event streams.
        usleep(500_000)
        let rssBefore = packd.residentBytes()
        var streams: [Int32] = []
        defer { for fd in streams { close(fd) } }
        for _ in 0..<subscribers {
            streams.append(try Self.openEventStream(port: packd.port, path: "/v1/packs/\(idleID)/events"))
        }
        let open = try Self.fetch(port, "/metrics")
        let count = String(decoding: open, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("packd_sse_subscribers ") } ?? "?"
        let rssAfter = packd.residentBytes()
        let delta = Double(rssAfter - rssBefore) / 1_048_576
        print(String(format: "sse       %d streams (%@): RSS %.1f → %.1f MiB, delta %.1f MiB = %.1f KiB per stream   (target < 50 MiB)",
                     subscribers, String(count), Double(rssBefore) / 1_048_576, Double(rssAfter) / 1_048_576, delta, delta * 1024 / Double(subscribers)))
        print("load after: \(Self.uptime())")
    }

    private func runWrk(_ url: String) throws -> (rps: Double, p99: Double) {
        let result = try Wrk(threads: threads, connections: connections, duration: duration).run(url)
        return (result.requestsPerSecond, result.p99Milliseconds)
    }

    private func measureRate(_ port: Int, _ packPath: String, seconds: Double) throws -> Double {
        let first = try Self.tiles(port, packPath)
        let began = Date()
        usleep(useconds_t(seconds * 1_000_000))
        let second = try Self.tiles(port, packPath)
        return Double(second.tiles - first.tiles) / Date().timeIntervalSince(began)
    }

    private static func tiles(_ port: Int, _ packPath: String) throws -> (tiles: Int64, state: PackState) {
        let pack = try JSONDecoder().decode(Pack.self, from: fetch(port, packPath))
        return (pack.progress.completedTiles, pack.state)
    }

    private static func fetch(_ port: Int, _ path: String) throws -> Data {
        let response = try LoopbackHTTPClient.request(port: port, method: "GET", path: path)
        guard response.status == 200 else { throw ValidationError("GET \(path) answered \(response.status)") }
        return response.body
    }

    private static func request(_ port: Int, _ method: String, _ path: String, json: [String: Any]) throws -> [String: Any] {
        (try? LoopbackHTTPClient.request(port: port, method: method, path: path, json: json).json()) ?? [:]
    }

    /// A connected socket that sent `GET path` and read the response head of an event stream.
    private static func openEventStream(port: Int, path: String) throws -> Int32 {
        let fd = try LoopbackHTTPClient.connect(port: port)
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            close(fd)
            throw ValidationError("cannot open an event stream: \(String(cString: strerror(errno)))")
        }
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard recv(fd, &byte, 1, 0) == 1 else {
                close(fd)
                throw ValidationError("event stream closed before its head")
            }
            head.append(byte)
        }
        guard head.starts(with: Array("HTTP/1.1 200".utf8)) else {
            close(fd)
            throw ValidationError("event stream answered \(String(decoding: head.prefix(40), as: UTF8.self))")
        }
        return fd
    }

    private static func uptime() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)).map { "loadavg " + $0.split(separator: " ").prefix(3).joined(separator: " ") } ?? "?"
    }
}
