import ArgumentParser
import Foundation
import Packs
import Glibc

/// `packd-bench serve-tiles`: wrk on one tile URL of a complete pack served by `packd serve`
/// (`GET /v1/packs/{id}/tiles/{source}/{z}/{x}/{y}`), beside nginx serving the same tile bytes
/// as a static file in the same run. The pack is downloaded first, by packd itself, from that
/// nginx, so the bytes are real stored rows (zlib in MapLibre's schema): identity requests pay
/// for an inflate, `Accept-Encoding: gzip` ones for the re-wrap.
struct ServeTilesBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve-tiles",
        abstract: "Requests/s of one offline tile URL from packd beside nginx serving the same bytes (wrk -t2 -c64)."
    )

    /// wrk's settings, packd's log level and the nginx baseline's, as `packd-bench server` takes them.
    @OptionGroup var server: ServerBenchmark
    @Option(help: "Bytes of each generated tile (compressible about 2:1, as vector tiles are).") var tileBytes = 8192

    static let target = 20_000.0

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-serve-tiles-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let root = directory.appendingPathComponent("www")
        let maxZoom = 3
        try writeUpstream(root: root, maxZoom: maxZoom)
        // Both write an access log line per request (packd at the default info level), like for like.
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: server.nginxWorkers, accessLog: ["trace", "debug", "info"].contains(server.logLevel))
        defer { nginx.stop() }
        try rewriteStyle(root: root, base: "http://127.0.0.1:\(nginx.port)")

        let packd = try PackdServeProcess.start(in: directory, database: directory.appendingPathComponent("bench.sqlite"),
                                                arguments: ["--log-level", server.logLevel, "--allow-upstream-hosts", "127.0.0.1"])
        defer { packd.stop() }
        let api = "http://127.0.0.1:\(packd.port)"
        let packID = try downloadPack(api: api, styleURL: "http://127.0.0.1:\(nginx.port)/style.json", maxZoom: maxZoom)

        let tile = "3/4/2"
        let packdURL = "\(api)/v1/packs/\(packID)/tiles/v/\(tile)"
        let nginxURL = "http://127.0.0.1:\(nginx.port)/tiles/\(tile).pbf"
        let stored = try CurlRequest.send(packdURL)
        let original = try Data(contentsOf: root.appendingPathComponent("tiles/\(tile).pbf"))
        guard stored.status == 200, stored.body == original else {
            throw ValidationError("packd does not serve the tile's bytes (status \(stored.status))")
        }

        print("wrk -t\(server.threads) -c\(server.connections) -d\(server.duration) --latency   one \(tileBytes)-byte tile; "
              + "nginx \(server.nginxWorkers) worker(s), packd one loop thread, log level \(server.logLevel)")
        // Alternating the three `--rounds` times and taking medians steadies a loaded machine.
        var rounds: [[ServerBenchmark.Result]] = []
        for _ in 1...max(1, server.rounds) {
            rounds.append([
                try server.runWrk(name: "packd tile", url: packdURL),
                try server.runWrk(name: "packd tile gzip", url: packdURL, headers: ["Accept-Encoding: gzip"]),
                try server.runWrk(name: "nginx same bytes", url: nginxURL),
            ])
            for result in rounds[rounds.count - 1] {
                print(String(format: "%-18@ %10.0f req/s   p99 %7.2f ms", result.name as NSString, result.requestsPerSecond, result.p99Milliseconds))
            }
        }
        let medians = (0..<3).map { index -> Double in
            let sorted = rounds.map { $0[index].requestsPerSecond }.sorted()
            return sorted[sorted.count / 2]
        }
        print(String(format: "median of %d round(s): packd %.0f, packd gzip %.0f, nginx %.0f req/s; ratio packd/nginx %.2f (identity), %.2f (gzip)",
                     rounds.count, medians[0], medians[1], medians[2], medians[0] / medians[2], medians[1] / medians[2]))
        print(String(format: "target: packd >= %.0f req/s -> %@", Self.target, (min(medians[0], medians[1]) >= Self.target ? "met" : "NOT met") as NSString))
    }

    /// A style with one vector source (inline tiles) and every tile of zooms 0…maxZoom.
    private func writeUpstream(root: URL, maxZoom: Int) throws {
        for z in 0...maxZoom {
            for x in 0..<(1 << z) {
                let folder = root.appendingPathComponent("tiles/\(z)/\(x)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for y in 0..<(1 << z) {
                    try Data(tileBody(seed: (z << 20) | (x << 10) | y)).write(to: folder.appendingPathComponent("\(y).pbf"))
                }
            }
        }
    }

    private func rewriteStyle(root: URL, base: String) throws {
        let style = """
            {"version": 8, "sources": {"v": {"type": "vector", "tiles": ["\(base)/tiles/{z}/{x}/{y}.pbf"], "maxzoom": 14}},
             "layers": [{"id": "bg", "type": "background"}]}
            """
        try Data(style.utf8).write(to: root.appendingPathComponent("style.json"))
    }

    /// Half random, half runs: deflates to about half, like a vector tile.
    private func tileBody(seed: Int) -> [UInt8] {
        var state = UInt64(seed) &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        var bytes: [UInt8] = []
        bytes.reserveCapacity(tileBytes)
        while bytes.count < tileBytes {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let value = UInt8(truncatingIfNeeded: state >> 56)
            bytes.append(value)
            bytes.append(contentsOf: repeatElement(value & 0x0F, count: Int(value % 3)))
        }
        return Array(bytes.prefix(tileBytes))
    }

    private func downloadPack(api: String, styleURL: String, maxZoom: Int) throws -> Int {
        let body = #"{"region": {"style_url": "\#(styleURL)", "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": \#(maxZoom)}}"#
        let created = try CurlRequest.send("\(api)/v1/packs", method: "POST", json: Data(body.utf8))
        guard created.status == 201, let id = (try? JSONSerialization.jsonObject(with: created.body) as? [String: Any])?["id"] as? Int else {
            throw ValidationError("creating the pack failed: \(created.status) \(String(decoding: created.body, as: UTF8.self))")
        }
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let pack = try CurlRequest.send("\(api)/v1/packs/\(id)")
            let state = (try? JSONDecoder().decode(Pack.self, from: pack.body))?.state
            if state == .complete { return id }
            if state == .failed { throw ValidationError("the pack failed: \(String(decoding: pack.body, as: UTF8.self))") }
            usleep(50_000)
        }
        throw ValidationError("the pack did not complete within 120 s")
    }
}
