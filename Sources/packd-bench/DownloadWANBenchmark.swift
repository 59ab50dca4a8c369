import ArgumentParser
import Foundation
import Glibc
import Packs
import PackdTestSupport

/// `packd-bench download-wan`: downloads from a tile server that answers each tile after a
/// delay, over HTTPS, with HTTP/2 and with HTTP/1.1 — the limit there is transfers in flight ×
/// round trip, not CPU. In the same run, for each delay and protocol: `curl --parallel
/// --parallel-max 100` on the same URLs and protocol, packd with its default settings, and
/// `mapproxy-seed -c 16` (HTTP/1.1 only: Python's client has no HTTP/2).
///
/// The server: nginx (Debian's) terminates TLS with a certificate of a CA the benchmark makes
/// (openssl), offers HTTP/2 on one port and HTTP/1.1 on another, and proxies over kept-alive
/// connections to `DelayedTileUpstream` in this process, which holds each answer for the delay
/// on a timer. That keeps the TLS and HTTP/2 a real tile server's front would speak, and a delay
/// that costs no CPU, exact to the millisecond, for thousands of requests at once; nginx alone
/// cannot delay (its `echo_sleep` needs a module Debian does not build into `nginx`).
struct DownloadWANBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download-wan",
        abstract: "Tiles/s of packd, curl --parallel and mapproxy-seed from an HTTPS tile server that answers after a delay."
    )

    @Option(help: "Tiles in the region (a window at --zoom whose cover is exactly this many).") var tiles = 5461
    @Option(help: "Zoom of the tile window.") var zoom = 14
    @Option(help: "Bytes of each tile (a real PNG).") var size = 20_480
    @Option(help: "Delays per response to measure, in milliseconds, comma-separated.") var delays = "20,40,100"
    @Option(help: "Protocols to measure: h2, http1.1 (comma-separated).") var protocols = "h2,http1.1"
    @Option(help: "curl --parallel-max.") var parallel = 100
    @Option(help: "mapproxy-seed -c (worker processes).") var mapproxyConcurrency = 16
    @Option(help: "The mapproxy-seed executable (make bench-wan installs MapProxy there).")
    var mapproxySeed = ".build/mapproxy/bin/mapproxy-seed"
    @Flag(inversion: .prefixedNo, help: "Run the mapproxy-seed baseline.") var mapproxy = true
    @Option(parsing: .upToNextOption, help: "Extra arguments for packd serve (the default settings when none).")
    var packdArguments: [String] = []
    @Option(help: "Milliseconds between polls of the pack's state.") var pollMilliseconds = 25
    @Option(help: "HTTP/2 streams nginx allows on a connection (http2_max_concurrent_streams; nginx's default 128, Apache's 100).")
    var serverStreams = 128
    @Option(help: "CPUs for the clients (packd, curl, mapproxy-seed), as taskset lists them, e.g. 1; run the benchmark itself under taskset -c on the others so the simulated upstream has its own.")
    var clientCpus: String?
    @Option(help: "Create packd's database with this SQLite page size before it opens it (packd's own default: WriterThread.Configuration.defaultPageSize).")
    var pageSize: Int?
    @Option(help: "Keep the work folder (logs, databases) here instead of a deleted temporary one.") var keep: String?

    struct Row {
        var delay: Int
        var proto: String
        var curl: Double?
        var packd: Double?
        var packdConnections: Int?
        var curlConnections: Int?
        var limit: String?
        var mapproxy: Double?
        /// CPU seconds per tile (all threads; packd's start-up included).
        var curlCPU: Double?
        var packdCPU: Double?
    }

    func run() throws {
        let delayList = delays.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        let protocolList = protocols.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        guard !delayList.isEmpty, delayList.allSatisfy({ $0 >= 0 }), protocolList.allSatisfy({ ["h2", "http1.1"].contains($0) })
        else { throw ValidationError("--delays: milliseconds like 20,40,100; --protocols: h2 and/or http1.1") }
        if let clientCpus {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset"),
                  clientCpus.allSatisfy({ $0.isNumber || $0 == "," || $0 == "-" }), !clientCpus.isEmpty
            else { throw ValidationError("--client-cpus: a CPU list such as 1 or 2-3, and /usr/bin/taskset (util-linux)") }
            ClientCPUs.list = clientCpus
        }
        if mapproxy, !FileManager.default.isExecutableFile(atPath: mapproxySeed) {
            throw ValidationError("no mapproxy-seed at \(mapproxySeed): run `make bench-wan` (or pass --no-mapproxy)")
        }
        let directory = keep.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-wan-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if keep == nil { try? FileManager.default.removeItem(at: directory) } }
        let authority = try TestCertificateAuthority(directory: directory)
        let tile = PNGTile.make(bytes: size)
        let window = try TileWindow(tiles: tiles, zoom: zoom)
        print("""
            \(tiles) tiles of \(tile.count) bytes (PNG) at z\(zoom); nginx (TLS) in front of an in-process server answering \
            after the delay; \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(DownloadBenchmark.loadAverage()) \
            (a shared machine: compare within a row)\(clientCpus.map { "; clients on CPUs \($0)" } ?? "")
            """)

        var rows: [Row] = []
        for delay in delayList {
            let upstream = try DelayedTileUpstream(delay: .milliseconds(delay), tile: tile)
            defer { upstream.stop() }
            let fronts = try Dictionary(uniqueKeysWithValues: protocolList.map { proto in
                (proto, try Self.tlsFront(proto, upstreamPort: upstream.port, authority: authority, directory: directory,
                                           serverStreams: serverStreams))
            })
            defer { for front in fronts.values { front.stop() } }
            for proto in protocolList {
                let front = fronts[proto]!
                let template = "https://127.0.0.1:\(front.port)/t/{z}/{x}/{y}.png"
                let log = directory.appendingPathComponent("\(proto)-access.log")
                var row = Row(delay: delay, proto: proto == "h2" ? "HTTP/2" : "HTTP/1.1")

                var offset = DownloadBenchmark.fileSize(log)
                var before = upstream.answered
                _ = upstream.takeSpan()
                let curlStart = ContinuousClock.now
                let childCPUBefore = ProcessCPU.reapedChildrenSeconds()
                let curlSeconds = try CurlParallel.seconds(
                    urls: window.urls(template: template), maximum: parallel,
                    arguments: ["--fail", "--cacert", authority.certificatePath, proto == "h2" ? "--http2" : "--http1.1"],
                    directory: directory)
                try Self.expect(upstream.answered - before, tiles, "curl")
                row.curl = Double(tiles) / curlSeconds
                let curlPhases = Self.phases(upstream.takeSpan(), start: curlStart, end: curlStart + .seconds(curlSeconds))
                row.curlCPU = (ProcessCPU.reapedChildrenSeconds() - childCPUBefore) / Double(tiles)
                row.curlConnections = Self.connections(in: log, from: offset)

                offset = DownloadBenchmark.fileSize(log)
                before = upstream.answered
                let (packdSeconds, limit, packdStart, packdCPU) = try downloadWithPackd(template: template, window: window, authority: authority,
                                                                  directory: directory.appendingPathComponent("packd-\(delay)-\(proto)"))
                try Self.expect(upstream.answered - before, tiles, "packd")
                row.packd = Double(tiles) / packdSeconds
                row.packdConnections = Self.connections(in: log, from: offset)
                row.limit = limit
                row.packdCPU = packdCPU.map { $0 / Double(tiles) }
                let packdPhases = Self.phases(upstream.takeSpan(), start: packdStart, end: packdStart + .seconds(packdSeconds))
                rows.append(row)
                print(Self.format(row))
                print("          to the first request · first to last answer · last answer to done: curl \(curlPhases), packd \(packdPhases); "
                      + "CPU per tile: curl \(Self.micros(row.curlCPU)), packd \(Self.micros(row.packdCPU))")
            }
            if mapproxy, let front = fronts["http1.1"] {
                let before = upstream.answered
                let seconds = try MapProxySeed(executable: mapproxySeed).seconds(
                    template: "https://127.0.0.1:\(front.port)/t/%(z)s/%(x)s/%(y)s.png", window: window,
                    caFile: authority.certificatePath, concurrency: mapproxyConcurrency,
                    directory: directory.appendingPathComponent("mapproxy-\(delay)"))
                let fetched = upstream.answered - before
                let rate = Double(fetched) / seconds
                for index in rows.indices where rows[index].delay == delay { rows[index].mapproxy = rate }
                print(String(format: "%4d ms  mapproxy-seed -c %d: %d tiles in %.1f s, %.0f tiles/s (HTTP/1.1)",
                             delay, mapproxyConcurrency, fetched, seconds, rate))
            }
        }
        print("")
        print("| delay | protocol | curl --parallel-max \(parallel) | packd (defaults) | packd/curl (≥ 0.8) | mapproxy-seed -c \(mapproxyConcurrency) | packd/mapproxy (≥ 5) | connections packd/curl | packd's host limit at the end | CPU per tile packd/curl |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for row in rows {
            let ratio = Self.ratio(row.packd, row.curl, "%.2f")
            let mapproxyRatio = Self.ratio(row.packd, row.mapproxy, "%.1f")
            print("| \(row.delay) ms | \(row.proto) | \(Self.rate(row.curl)) | \(Self.rate(row.packd)) | \(ratio) | \(Self.rate(row.mapproxy)) | \(mapproxyRatio) | \(row.packdConnections.map(String.init) ?? "?")/\(row.curlConnections.map(String.init) ?? "?") | \(row.limit ?? "?") | \(Self.micros(row.packdCPU)) / \(Self.micros(row.curlCPU)) |")
        }
    }

    /// packd serve with its default settings (plus `--packd-arguments`) downloading the window;
    /// the seconds from POST to `complete`, the host's limit from `/metrics` at the end, when the
    /// POST was sent, and the CPU seconds packd used (start-up included).
    private func downloadWithPackd(template: String, window: TileWindow, authority: TestCertificateAuthority,
                                   directory: URL) throws -> (Double, String, ContinuousClock.Instant, Double?) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let database = directory.appendingPathComponent("wan.sqlite")
        if let pageSize { try DownloadBenchmark.createEmptyDatabase(at: database.path, pageSize: pageSize) }
        let packd = try PackdServeProcess.start(
            in: directory, database: database,
            arguments: ["--allow-upstream-hosts", "127.0.0.1", "--upstream-ca-file", authority.certificatePath,
                        "--log-level", "warning"] + packdArguments)
        defer { packd.stop() }
        let region: [String: Any] = [
            "tiles": [template], "bounds": window.bounds.geoJSONObject, "min_zoom": window.zoom, "max_zoom": window.zoom,
        ]
        let start = Date().timeIntervalSince1970
        let posted = ContinuousClock.now
        let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs",
                                                     json: ["region": region, "name": "wan"])
        guard created.status == 201, let packID = try created.json()["id"] as? Int else {
            throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
        }
        let done = try DownloadBenchmark.waitForPack(packd, packID, pollMilliseconds: pollMilliseconds) { !$0.state.isScheduled }
        let seconds = Date().timeIntervalSince1970 - start
        guard done.state == .complete, done.progress.completedTiles == window.xRange.count * window.yRange.count else {
            throw ValidationError("the pack ended \(done.state) with \(done.progress.completedTiles) tiles; see \(directory.path)/packd.log")
        }
        let metrics = String(decoding: try LoopbackHTTPClient.request(port: packd.port, method: "GET", path: "/metrics").body,
                             as: UTF8.self)
        let limit = metrics.split(separator: "\n").first { $0.hasPrefix("packd_upstream_host_transfer_limit{") }
            .flatMap { $0.split(separator: " ").last }.map(String.init) ?? "?"
        return (seconds, limit, posted, ProcessCPU.seconds(packd.process.processIdentifier))
    }

    /// nginx on its own port: TLS with the benchmark CA's certificate, HTTP/2 (`h2`) or only
    /// HTTP/1.1 offered by ALPN, proxying to the delaying server over kept-alive connections,
    /// logging each request's connection number (to count the connections a client opened).
    static func tlsFront(_ proto: String, upstreamPort: Int, authority: TestCertificateAuthority,
                         directory: URL, serverStreams: Int = 128) throws -> NginxBaseline {
        try NginxBaseline.start(
            in: directory, root: directory, workers: 1, accessLog: true,
            locations: """
                ssl_certificate \(authority.serverCertificatePath);
                ssl_certificate_key \(authority.serverKeyPath);
                location /t/ {
                    proxy_pass http://delayed;
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                }
                """,
            listenOptions: proto == "h2" ? "ssl http2" : "ssl",
            httpDirectives: """
                log_format connection '$connection $server_protocol';
                access_log \(directory.path)/\(proto)-access.log connection;
                http2_max_concurrent_streams \(max(1, serverStreams));
                upstream delayed { server 127.0.0.1:\(upstreamPort); keepalive 1024; }
                """,
            name: "nginx-\(proto)")
    }

    /// Distinct connection numbers in the access log written since `offset`.
    static func connections(in log: URL, from offset: Int) -> Int? {
        guard let handle = try? FileHandle(forReadingFrom: log) else { return nil }
        defer { try? handle.close() }
        try? handle.seek(toOffset: UInt64(offset))
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        return Set(text.split(separator: "\n")).count
    }

    /// "12 ms · 1.71 s · 30 ms": how a client's time splits around the upstream's busy span.
    static func phases(_ span: (first: ContinuousClock.Instant, last: ContinuousClock.Instant)?,
                       start: ContinuousClock.Instant, end: ContinuousClock.Instant) -> String {
        guard let span else { return "?" }
        func ms(_ duration: Duration) -> String { String(format: "%.0f ms", seconds(duration) * 1000) }
        return ms(span.first - start) + " · " + String(format: "%.2f s", seconds(span.last - span.first)) + " · " + ms(end - span.last)
    }

    static func micros(_ seconds: Double?) -> String {
        seconds.map { String(format: "%.0f µs", $0 * 1e6) } ?? "?"
    }

    static func expect(_ answered: Int, _ tiles: Int, _ client: String) throws {
        guard answered == tiles else {
            throw ValidationError("\(client) made \(answered) tile requests, not \(tiles)")
        }
    }

    static func rate(_ value: Double?) -> String {
        value.map { String(format: "%.0f/s", $0) } ?? "—"
    }

    static func ratio(_ a: Double?, _ b: Double?, _ format: String) -> String {
        guard let a, let b, b > 0 else { return "—" }
        return String(format: format, a / b)
    }

    static func format(_ row: Row) -> String {
        let proto = row.proto.padding(toLength: 8, withPad: " ", startingAt: 0)
        return String(format: "%4d ms  ", row.delay) + proto
            + String(format: "  curl %6.0f tiles/s (%d connections)   packd %6.0f tiles/s (%d connections, limit ",
                     row.curl ?? 0, row.curlConnections ?? 0, row.packd ?? 0, row.packdConnections ?? 0)
            + (row.limit ?? "?") + ")   packd/curl " + ratio(row.packd, row.curl, "%.2f")
    }
}

