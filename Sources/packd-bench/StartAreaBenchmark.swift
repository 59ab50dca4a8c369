import ArgumentParser
import Foundation
import Glibc
import PackdTestSupport
import Packs

/// `packd-bench start-area`: the release `packd serve` downloading a template region of about
/// `--tiles` tiles (zooms `--zoom` − 6 … `--zoom`, a square window at the top zoom) from nginx on
/// loopback, zoom by zoom and nearest first from a `start_area` at the region's centre whose
/// radius makes the region 100 times its area, rounds interleaved. Reported: each order's
/// tiles/s (POST to `complete`) and their median ratio (the cost of the nearest-first order), and
/// when `start_area_ready` arrived (read from the pack's event stream) against the whole pack's
/// time and in tiles stored. Every round downloads into a fresh database.
struct StartAreaBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start-area",
        abstract: "start_area_ready time against the whole pack's, and the nearest-first order's cost in throughput."
    )

    @Option(help: "Tiles at the top zoom (the whole pack holds about a third more).") var tiles = 75_000
    @Option(help: "Bytes of each tile (incompressible).") var size = 4_096
    @Option(help: "The top zoom.") var zoom = 16
    @Option(help: "Rounds of each order, interleaved.") var rounds = 3
    @Option(help: "How many times the start area the region is.") var areaRatio = 100.0

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-start-area-\(getpid())")
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try DownloadBenchmark.incompressibleBytes(size).write(to: root.appendingPathComponent("tile.bin"))
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: 1, accessLog: false,
                                            locations: "location /t/ { try_files /tile.bin =404; }")
        defer { nginx.stop() }
        let template = "http://127.0.0.1:\(nginx.port)/t/{z}/{x}/{y}.pbf"
        let window = try TileWindow(tiles: tiles, zoom: zoom)
        let bounds = window.bounds
        let center = [(bounds.west + bounds.east) / 2, (bounds.south + bounds.north) / 2]
        // The region's ground area from its extent in metres (it is near the equator).
        let metresPerDegree = 111_320.0
        let area = (bounds.east - bounds.west) * metresPerDegree * cos(center[1] * .pi / 180) * (bounds.north - bounds.south) * metresPerDegree
        let radius = (area / areaRatio / Double.pi).squareRoot()
        let region: [String: Any] = ["tiles": [template], "bounds": bounds.geoJSONObject, "min_zoom": zoom - 6, "max_zoom": zoom]
        print(String(format: "template region z%d-%d, %d tiles at z%d, %d-byte tiles, nginx on 127.0.0.1; start area %.0f m around the centre (the region is %.0f× it); %d cores, load %@",
                     zoom - 6, zoom, tiles, zoom, size, radius, areaRatio, ProcessInfo.processInfo.activeProcessorCount,
                     DownloadBenchmark.loadAverage()))

        var plain: [Double] = []
        var nearest: [Double] = []
        var readyShares: [Double] = []
        var total = 0
        for round in 0..<rounds {
            for withStartArea in [false, true] {
                let database = directory.appendingPathComponent("round-\(round)-\(withStartArea).sqlite")
                let packd = try PackdServeProcess.start(in: directory, database: database,
                                                        arguments: ["--allow-upstream-hosts", "127.0.0.1", "--log-level", "warning"])
                defer { packd.stop() }
                let events = try StreamClient(port: packd.port, timeout: 600)
                try events.get("/v1/events", headers: [:])
                var body: [String: Any] = ["region": region, "name": "start-area"]
                if withStartArea { body["start_area"] = ["center": center, "radius_m": radius] }
                let start = Date().timeIntervalSince1970
                let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs", json: body)
                guard created.status == 201, let packID = try created.json()["id"] as? Int else {
                    throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
                }
                var readyAt: Double?
                var tilesAtReady: Int64?
                var lastProgress: Int64 = 0
                _ = try events.events { event in
                    let data = (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any] ?? [:]
                    if event.type == "progress", let progress = data["progress"] as? [String: Any],
                       let tiles = progress["completed_tiles"] as? Int {
                        lastProgress = Int64(tiles)
                    }
                    if event.type == "start_area_ready" {
                        readyAt = Date().timeIntervalSince1970
                        tilesAtReady = lastProgress
                    }
                    return event.type == "state" && data["pack_id"] as? Int == packID
                        && (data["state"] as? String).flatMap(PackState.init(rawValue:))?.isScheduled == false
                }
                let seconds = Date().timeIntervalSince1970 - start
                let pack = try LoopbackHTTPClient.request(port: packd.port, method: "GET", path: "/v1/packs/\(packID)").pack()
                guard pack.state == .complete else { throw ValidationError("the pack ended \(pack.state)") }
                total = Int(pack.progress.completedTiles)
                let rate = Double(total) / seconds
                if withStartArea {
                    nearest.append(rate)
                    guard let readyAt else { throw ValidationError("no start_area_ready event") }
                    readyShares.append((readyAt - start) / seconds)
                    print(String(format: "round %d nearest first %8.0f tiles/s (%.2f s); start_area_ready after %.2f s = %.1f %% of the pack's time, %d of %d tiles (%.1f %%) published before it",
                                 round, rate, seconds, readyAt - start, (readyAt - start) / seconds * 100,
                                 tilesAtReady ?? 0, total, Double(tilesAtReady ?? 0) / Double(total) * 100))
                } else {
                    plain.append(rate)
                    print(String(format: "round %d zoom by zoom  %8.0f tiles/s (%.2f s, %d tiles)", round, rate, seconds, total))
                }
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        print(String(format: "median: zoom by zoom %.0f tiles/s, nearest first %.0f tiles/s: ratio %.3f (cost %.1f %%, target <= 5 %%); start_area_ready at %.1f %% of the pack's time (%d tiles)",
                     median(plain), median(nearest), median(nearest) / median(plain), (1 - median(nearest) / median(plain)) * 100,
                     median(readyShares) * 100, total))
    }
}
