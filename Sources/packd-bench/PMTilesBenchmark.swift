import ArgumentParser
import Foundation
import Glibc
import Packs
import PackdTestSupport
import Server
import TileFormats

/// `packd-bench pmtiles`: a region read out of one PMTiles archive with coalesced range requests,
/// beside packd downloading the same tiles one URL each — both from one HTTPS server (nginx, TLS,
/// HTTP/2) answering every request after a delay, as `download-wan` sets it up. The archive holds
/// a window of tiles four times the region's (the region in its middle), so the Hilbert curve
/// leaves the region and comes back: requests must bridge gaps or split. Reports, per run: tiles
/// per second and its ratio to the per-URL run, requests per stored tile, and the bytes fetched
/// against the stored tiles' bytes and the directories read; then the same for a small sweep of
/// the gap and range bounds (`--archive-max-gap`, `--archive-max-range`).
struct PMTilesBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pmtiles",
        abstract: "A region read from one PMTiles archive with coalesced ranges vs one URL per tile, over HTTPS/HTTP/2 with a delay."
    )

    @Option(help: "Tiles in the region (a window at --zoom whose cover is exactly this many).") var tiles = 10_000
    @Option(help: "Zoom of the region and the archive.") var zoom = 14
    @Option(help: "Smallest tile in bytes (random bytes: already-compressed tiles).") var minSize = 500
    @Option(help: "Largest tile in bytes.") var maxSize = 4_000
    @Option(help: "Milliseconds before each answer.") var delay = 40
    @Option(help: "Gap:range[:bytes in flight] bounds to sweep, in bytes (comma-separated; the first is packd's default).")
    var sweep = "65536:1048576,0:1048576,16384:1048576,262144:1048576,65536:262144,65536:4194304,65536:16777216"
    @Option(help: "Rounds of the whole comparison, interleaved (the table shows each round).") var rounds = 1
    @Option(help: "Milliseconds between polls of the pack's state.") var pollMilliseconds = 20
    @Option(help: "Keep the work folder here instead of a deleted temporary one.") var keep: String?

    /// What the upstream served, by kind.
    final class Served: @unchecked Sendable {
        private let lock = NSLock()
        private var counts: [String: (requests: Int, bytes: Int)] = [:]
        func add(_ kind: String, _ bytes: Int) { lock.withLock { counts[kind, default: (0, 0)].requests += 1; counts[kind, default: (0, 0)].bytes += bytes } }
        func take() -> [String: (requests: Int, bytes: Int)] { lock.withLock { defer { counts = [:] }; return counts } }
    }

    struct Run {
        var label: String
        var seconds: Double
        var served: [String: (requests: Int, bytes: Int)]
        var archiveRequests: Int64
        var archiveBytes: Int64
        /// packd's CPU seconds (all threads, start-up included).
        var cpu: Double?
        /// To the first request · the upstream's busy span · from its last answer to complete.
        var phases = "?"
        var ended = ContinuousClock.now
    }

    private func phases(_ run: Run, _ span: (first: ContinuousClock.Instant, last: ContinuousClock.Instant)?) -> String {
        DownloadWANBenchmark.phases(span, start: run.ended - .milliseconds(Int64(run.seconds * 1000)), end: run.ended)
    }

    func run() throws {
        let bounds = try sweep.split(separator: ",").map { pair -> [Int] in
            let parts = pair.split(separator: ":").compactMap { Int($0) }
            guard parts.count == 2 || parts.count == 3 else {
                throw ValidationError("--sweep: gap:range[:in-flight] in bytes, e.g. 65536:1048576")
            }
            return parts
        }
        let window = try TileWindow(tiles: tiles, zoom: zoom)
        let directory = keep.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-pmtiles-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if keep == nil { try? FileManager.default.removeItem(at: directory) } }

        // The archive: the region's window widened by half its size on every side.
        let width = window.xRange.count
        let height = window.yRange.count
        let side = 1 << zoom
        var seed: UInt64 = 2026
        var archiveTiles: [PMTilesArchiveBuilder.Tile] = []
        var bodies: [String: [UInt8]] = [:]
        for x in max(0, window.xRange.lowerBound - width / 2)...min(side - 1, window.xRange.upperBound + width / 2) {
            for y in max(0, window.yRange.lowerBound - height / 2)...min(side - 1, window.yRange.upperBound + height / 2) {
                seed += 1
                let roll = randomBytes(count: 8, seed: ~seed).withUnsafeBytes { $0.load(as: UInt64.self) }
                let body = randomBytes(count: minSize + Int(roll % UInt64(max(1, maxSize - minSize + 1))), seed: seed)
                archiveTiles.append(.init(z: zoom, x: x, y: y, bytes: body))
                bodies["\(zoom)/\(x)/\(y)"] = body
            }
        }
        archiveTiles.sort { HilbertTileID.encode(z: $0.z, x: $0.x, y: $0.y)! < HilbertTileID.encode(z: $1.z, x: $1.x, y: $1.y)! }
        var builder = PMTilesArchiveBuilder()
        builder.tileCompression = .none
        builder.metadata = ["name": "benchmark", "vector_layers": [["id": "x", "fields": [String: String]()]]]
        let archive = builder.build(archiveTiles)
        let header = try PMTilesHeader(decoding: Array(archive.prefix(PMTilesHeader.size)))
        let regionBytes = window.urls(template: "{z}/{x}/{y}").reduce(0) { $0 + (bodies[$1]?.count ?? 0) }
        print("""
            region: \(tiles) tiles at z\(zoom), \(regionBytes) bytes; archive: \(archiveTiles.count) tiles, \(archive.count) bytes, \
            root \(header.rootLength) bytes, leaves \(header.leafDirectoriesLength) bytes; \(delay) ms before each answer, \
            HTTPS/HTTP/2 through nginx; \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(DownloadBenchmark.loadAverage())
            """)

        let served = Served()
        let etag = "\"bench-1\""
        let tileBodies = bodies
        let upstream = try DelayedTileUpstream(delay: .milliseconds(delay), paths: ["/t/{z}/{x}/{file}", "/t/a.pmtiles"]) { request in
            Self.answer(request, archive: archive, header: header, bodies: tileBodies, etag: etag, served: served)
        }
        defer { upstream.stop() }
        let authority = try TestCertificateAuthority(directory: directory)
        let front = try DownloadWANBenchmark.tlsFront("h2", upstreamPort: upstream.port, authority: authority, directory: directory)
        defer { front.stop() }
        let base = "https://127.0.0.1:\(front.port)/t"

        var runs: [Run] = []
        for round in 1...max(1, rounds) {
            _ = upstream.takeSpan()
            var perURL = try download(["tiles": [base + "/{z}/{x}/{y}"]], window: window, arguments: [], label: "one URL a tile",
                                      authority: authority, directory: directory.appendingPathComponent("url-\(round)"))
            perURL.served = served.take()
            perURL.phases = phases(perURL, upstream.takeSpan())
            runs.append(perURL)
            print(format(perURL, baseline: perURL, regionBytes: regionBytes))
            for bound in bounds {
                let (gap, span) = (bound[0], bound[1])
                let inFlight = bound.count == 3 ? ["--archive-bytes-in-flight", "\(bound[2])"] : []
                let label = "archive gap \(gap / 1024) KiB, range \(span / 1024) KiB" + (bound.count == 3 ? ", \(bound[2] >> 20) MiB in flight" : "")
                var run = try download(["pmtiles": base + "/a.pmtiles"], window: window,
                                       arguments: ["--archive-max-gap", "\(gap)", "--archive-max-range", "\(span)"] + inFlight,
                                       label: label, authority: authority,
                                       directory: directory.appendingPathComponent("archive-\(round)-\(bound.map(String.init).joined(separator: "-"))"))
                run.served = served.take()
                run.phases = phases(run, upstream.takeSpan())
                runs.append(run)
                print(format(run, baseline: perURL, regionBytes: regionBytes))
            }
        }
        print("")
        print("| run | tiles/s | × one URL a tile (≥ 10) | requests | requests per stored tile (≤ 0.05) | bytes fetched | stored tiles' bytes + directories read | fetched / (tiles + directories) (≤ 1.15) |")
        print("|---|---|---|---|---|---|---|---|")
        var baseline = runs[0]
        for run in runs {
            if run.label == "one URL a tile" { baseline = run }
            print(row(run, baseline: baseline, regionBytes: regionBytes))
        }
    }

    /// packd serve downloading the window as `content` (a template or an archive): seconds from
    /// POST to complete, with the archive counts the pack reports.
    private func download(_ content: [String: Any], window: TileWindow, arguments: [String], label: String,
                          authority: TestCertificateAuthority, directory: URL) throws -> Run {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let packd = try PackdServeProcess.start(
            in: directory, database: directory.appendingPathComponent("bench.sqlite"),
            arguments: ["--allow-upstream-hosts", "127.0.0.1", "--upstream-ca-file", authority.certificatePath, "--log-level", "warning"]
                + arguments)
        defer { packd.stop() }
        var region = content
        region["bounds"] = window.bounds.geoJSONObject
        region["min_zoom"] = window.zoom
        region["max_zoom"] = window.zoom
        let start = Date().timeIntervalSince1970
        let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs", json: ["region": region])
        guard created.status == 201, let packID = try created.json()["id"] as? Int else {
            throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
        }
        let done = try DownloadBenchmark.waitForPack(packd, packID, pollMilliseconds: pollMilliseconds) { !$0.state.isScheduled }
        let seconds = Date().timeIntervalSince1970 - start
        let ended = ContinuousClock.now
        guard done.state == .complete, done.progress.completedTiles == Int64(tiles) else {
            throw ValidationError("\(label): the pack ended \(done.state) with \(done.progress.completedTiles) tiles; see \(directory.path)")
        }
        return Run(label: label, seconds: seconds, served: [:], archiveRequests: done.progress.archiveRequests,
                   archiveBytes: done.progress.archiveBytes, cpu: packd.cpuSeconds, ended: ended)
    }

    /// The upstream: tiles by URL (404 outside the archive's window), the archive by range with
    /// its ETag (412 for another), each answer counted by what it holds.
    static func answer(_ request: HTTPRequest, archive: [UInt8], header: PMTilesHeader, bodies: [String: [UInt8]], etag: String,
                       served: Served) -> HTTPResponse {
        guard request.path.hasSuffix("/a.pmtiles") else {
            let parts = request.path.split(separator: "/")
            guard parts.count == 4, let body = bodies["\(parts[1])/\(parts[2])/\(parts[3])"] else {
                served.add("tile 404", 0)
                return HTTPResponse(status: .notFound)
            }
            served.add("tile", body.count)
            return HTTPResponse(status: .ok, headers: ["Content-Type": "application/vnd.mapbox-vector-tile"], body: body)
        }
        if let precondition = request.headers["If-Match"], precondition != etag {
            return HTTPResponse(status: HTTPStatus(412, "Precondition Failed"), headers: ["ETag": etag])
        }
        guard let range = request.headers["Range"].flatMap(ByteRange.parse)?.resolve(size: archive.count) else {
            return HTTPResponse(status: HTTPStatus(416, "Range Not Satisfiable"), headers: ["Content-Range": "bytes */\(archive.count)"])
        }
        let start = UInt64(range.lowerBound)
        let kind = start < UInt64(PMTilesHeader.rootFetchSize) ? "header and root"
            : start >= header.leafDirectoriesOffset && start < header.leafDirectoriesOffset + header.leafDirectoriesLength ? "leaves"
            : start >= header.tileDataOffset ? "tile ranges" : "metadata"
        served.add(kind, range.count)
        return HTTPResponse(status: HTTPStatus(206, "Partial Content"),
                            headers: ["ETag": etag, "Content-Range": "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(archive.count)",
                                      "Content-Type": "application/octet-stream"],
                            body: Array(archive[range]))
    }

    private func format(_ run: Run, baseline: Run, regionBytes: Int) -> String {
        let requests = run.served.values.reduce(0) { $0 + $1.requests }
        let kinds = run.served.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.requests) (\($0.value.bytes) B)" }.joined(separator: ", ")
        return String(format: "%@: %.2f s, %.0f tiles/s (%.1f× one URL a tile); ", run.label, run.seconds, Double(tiles) / run.seconds,
                      baseline.seconds / run.seconds) + "\(requests) requests: \(kinds); the pack counts \(run.archiveRequests) archive requests, "
            + "\(run.archiveBytes) bytes; packd's CPU \(DownloadWANBenchmark.micros(run.cpu.map { $0 / Double(tiles) })) a tile; "
            + "to the first request · first to last answer · last answer to complete: \(run.phases)"
    }

    private func row(_ run: Run, baseline: Run, regionBytes: Int) -> String {
        let requests = run.served.values.reduce(0) { $0 + $1.requests }
        let fetched = run.served.values.reduce(0) { $0 + $1.bytes }
        let directories = (run.served["header and root"]?.bytes ?? 0) + (run.served["leaves"]?.bytes ?? 0) + (run.served["metadata"]?.bytes ?? 0)
        let isArchive = run.label != "one URL a tile"
        let ratio = isArchive ? String(format: "%.3f", Double(fetched) / Double(regionBytes + directories)) : "—"
        return "| \(run.label) | " + String(format: "%.0f", Double(tiles) / run.seconds) + " | "
            + (isArchive ? String(format: "%.1f", baseline.seconds / run.seconds) : "1") + " | \(requests) | "
            + String(format: "%.4f", Double(requests) / Double(tiles)) + " | \(fetched) | \(regionBytes) + \(directories) | \(ratio) |"
    }
}
