import ArgumentParser
import Foundation
import Glibc
import Jobs
import Packs
import Plan
import Store

/// `packd-bench glyphs`: `"glyphs": "region"` against `"all"` on the Natural Earth fixture served
/// by nginx (as `serve-ne.sh` does), rounds interleaved, each pack into a fresh database: the
/// resources, bytes, glyph ranges and download time (POST to `complete`) of each, and the time
/// reading the region pack's stored tiles to choose its ranges takes (the same reads packd runs,
/// timed here on the stored file) against that pack's download time.
///
/// Three cases: the fixture's own style (its labels come from the cities GeoJSON, so no tile is
/// read), over Europe z0-6; the fixture's tiles with their country and city names labelled from
/// the vector tiles and a GeoJSON of East Asian cities in CJK — CJK labels only outside the
/// region — over Europe z4-6 (from z4, a view of Europe cannot reach East Asia); and that style
/// over the whole world z0-6, every tile read. The choice's cost is reported in wall time and in
/// CPU time (the scanning thread's against the packd process's for the whole download), the
/// latter unmoved by other work on the machine.
struct GlyphsBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "glyphs",
        abstract: "Bytes, resources and time of \"glyphs\": \"region\" packs against \"all\", and the cost of reading the tiles."
    )

    @Option(help: "The shared fixtures folder (holding ne/).") var fixtures = "../shared/fixtures"
    @Option(help: "Rounds of each pack, interleaved; medians are reported.") var rounds = 3

    struct Case {
        let name: String
        let style: String
        let region: [String: Any]
    }

    func run() throws {
        let source = URL(fileURLWithPath: fixtures).appendingPathComponent("ne")
        guard FileManager.default.fileExists(atPath: source.appendingPathComponent("style.json").path) else {
            throw ValidationError("no fixture at \(source.path) (pass --fixtures)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-glyphs-\(getpid())")
        let root = directory.appendingPathComponent("www")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.copyItem(at: source, to: root)
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: 1, accessLog: false, locations: """
            types { application/json json geojson; image/png png; application/x-protobuf pbf; }
            location /tiles/ { add_header Content-Encoding gzip; try_files $uri =404; }
            location / { }
            """)
        defer { nginx.stop() }
        let base = "http://127.0.0.1:\(nginx.port)"
        for name in ["style.json", "tiles.json", "raster.json"] {
            let file = root.appendingPathComponent(name)
            let text = try String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "{{BASE}}", with: base)
            try Data(text.utf8).write(to: file)
        }
        try Self.writeLabelledStyle(root: root, base: base)
        let europe = [-11.0, 35.0, 30.0, 60.0]
        let cases = [
            Case(name: "fixture style (labels from GeoJSON), Europe z0-6", style: "style.json",
                 region: ["style_url": "\(base)/style.json", "bounds": europe, "min_zoom": 0, "max_zoom": 6]),
            Case(name: "tiles labelled + CJK labels only outside the region, Europe z4-6", style: "style-labelled.json",
                 region: ["style_url": "\(base)/style-labelled.json", "bounds": europe, "min_zoom": 4, "max_zoom": 6]),
            Case(name: "tiles labelled, whole world z0-6 (every tile read)", style: "style-labelled.json",
                 region: ["style_url": "\(base)/style-labelled.json", "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 6]),
        ]
        print("Natural Earth fixture from nginx on 127.0.0.1, glyphs of two stacks (256 ranges each, ten real), \(ProcessInfo.processInfo.activeProcessorCount) cores, load \(DownloadBenchmark.loadAverage())")
        for benchmarkCase in cases {
            try measure(benchmarkCase, directory: directory, root: root, base: base)
        }
    }

    private struct Round {
        var seconds: Double
        var resources: Int64
        var bytes: Int64
        var glyphRanges: Int
        var glyphBytes: Int64
        var skipped: Int64?
        var scanSeconds: Double?
        var scanCPU: Double?
        var packdCPU: Double?
        var scannedTiles: Int?
    }

    private func measure(_ benchmarkCase: Case, directory: URL, root: URL, base: String) throws {
        print("== \(benchmarkCase.name)")
        var all: [Round] = []
        var lean: [Round] = []
        for round in 0..<rounds {
            for glyphs in ["all", "region"] {
                var region = benchmarkCase.region
                region["glyphs"] = glyphs
                let database = directory.appendingPathComponent("glyphs-\(round)-\(glyphs).sqlite")
                let packd = try PackdServeProcess.start(in: directory, database: database,
                                                        arguments: ["--allow-upstream-hosts", "127.0.0.1", "--log-level", "warning"])
                let start = Date().timeIntervalSince1970
                let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs",
                                                             json: ["region": region, "name": "glyphs-\(glyphs)"])
                guard created.status == 201, let packID = try created.json()["id"] as? Int else {
                    packd.stop()
                    throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
                }
                let pack = try DownloadBenchmark.waitForPack(packd, packID, pollMilliseconds: 5) { !$0.state.isScheduled }
                let seconds = Date().timeIntervalSince1970 - start
                let packdCPU = packd.cpuSeconds
                packd.stop()
                guard pack.state == .complete else { throw ValidationError("the \(glyphs) pack ended \(pack.state)") }
                let stored = try Self.glyphs(database.path, packID: Int64(packID))
                var result = Round(seconds: seconds, resources: pack.progress.completedResources, bytes: pack.progress.completedBytes,
                                   glyphRanges: stored.ranges, glyphBytes: stored.bytes, skipped: pack.skippedGlyphRanges?.ranges)
                if glyphs == "region" {
                    let scan = try Self.scan(database.path, packID: Int64(packID), region: region, root: root, base: base,
                                             style: benchmarkCase.style)
                    result.scanSeconds = scan.seconds
                    result.scanCPU = scan.cpu
                    result.packdCPU = packdCPU
                    result.scannedTiles = scan.tiles
                    lean.append(result)
                } else {
                    all.append(result)
                }
                print(String(format: "round %d %-6@ %6.2f s  %6lld resources  %8.2f MB  %3d glyph ranges (%7.2f MB)%@", round,
                             glyphs, seconds, result.resources, Double(result.bytes) / 1e6, result.glyphRanges,
                             Double(result.glyphBytes) / 1e6,
                             result.scanSeconds.map { String(format: "  choosing: %.3f s over %d tiles (%.1f %% of the download); CPU %.3f s against packd's %.3f s (%.1f %%)",
                                                             $0, result.scannedTiles ?? 0, $0 / seconds * 100, result.scanCPU ?? 0,
                                                             result.packdCPU ?? 0, (result.scanCPU ?? 0) / max(result.packdCPU ?? 1, 1e-9) * 100) } ?? ""))
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let a = all[all.count / 2], r = lean[lean.count / 2]
        print(String(format: "median: all %.2f s, %lld resources, %.2f MB (glyphs %d ranges, %.2f MB); region %.2f s, %lld resources (%.0f %%), %.2f MB (%.0f %%), glyphs %d ranges (%lld skipped), %.2f MB; choosing the ranges %.3f s = %.1f %% of the region pack's download, CPU %.1f %% of packd's for it (target < 10 %%)",
                     median(all.map(\.seconds)), a.resources, Double(a.bytes) / 1e6, a.glyphRanges, Double(a.glyphBytes) / 1e6,
                     median(lean.map(\.seconds)), r.resources, Double(r.resources) / Double(a.resources) * 100,
                     Double(r.bytes) / 1e6, Double(r.bytes) / Double(a.bytes) * 100, r.glyphRanges, r.skipped ?? 0,
                     Double(r.glyphBytes) / 1e6, median(lean.compactMap(\.scanSeconds)),
                     median(lean.compactMap(\.scanSeconds)) / median(lean.map(\.seconds)) * 100,
                     median(lean.compactMap { ($0.scanCPU ?? 0) / max($0.packdCPU ?? 1, 1e-9) }) * 100))
    }

    /// Glyph ranges the pack holds and their stored bytes.
    static func glyphs(_ path: String, packID: Int64) throws -> (ranges: Int, bytes: Int64) {
        let reader = try StoreReader(path: path)
        var ranges = 0
        var bytes: Int64 = 0
        for url in try reader.storedResourceURLs(packID: packID) where url.contains("/fonts/") {
            ranges += 1
            bytes += Int64(try reader.resource(.resource(url: url, kind: .glyphs), linkedTo: packID)?.body?.storedSize ?? 0)
        }
        return (ranges, bytes)
    }

    /// The reads packd runs to choose the region pack's glyph ranges, timed on its stored file.
    static func scan(_ path: String, packID: Int64, region: [String: Any], root: URL, base: String,
                     style: String) throws -> (seconds: Double, cpu: Double, tiles: Int) {
        var builder = PlanBuilder(region: try RegionDefinition(json: region))
        try builder.addStyle(try Data(contentsOf: root.appendingPathComponent(style)))
        for url in builder.missingTileJSONURLs {
            try builder.addTileJSON(try Data(contentsOf: root.appendingPathComponent(String(url.dropFirst(base.count + 1)))), url: url)
        }
        guard let subset = builder.plan.glyphSubset else { throw ValidationError("the plan has no glyph subset") }
        let reader = try StoreReader(path: path)
        let start = Date().timeIntervalSince1970
        let cpuStart = Self.threadCPU()
        let scanner = StoredTileLabels(subset: subset)
        var glyphs = LabelGlyphs()
        var after: Int64 = 0
        var tiles = 0
        while true {
            let page = try GlyphChoice.readPage(reader, packID: packID, scanner: scanner, after: after, into: &glyphs)
            tiles += page.tiles
            guard let last = page.lastRowID else { break }
            after = last
        }
        let tilesRead = Date().timeIntervalSince1970
        _ = try GlyphChoice.choose(reader, packID: packID, subset: subset, glyphs: glyphs)
        let end = Date().timeIntervalSince1970
        print(String(format: "  (choosing: %.3f s reading %d tiles, %.3f s the GeoJSON and the choice)", tilesRead - start, tiles,
                     end - tilesRead))
        return (end - start, Self.threadCPU() - cpuStart, tiles)
    }

    /// CPU seconds of the calling thread.
    static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// The fixture's style with its vector tiles' country and city names labelled, and a GeoJSON
    /// of East Asian cities named in CJK.
    static func writeLabelledStyle(root: URL, base: String) throws {
        guard var style = try JSONSerialization.jsonObject(with: Data(contentsOf: root.appendingPathComponent("style.json"))) as? [String: Any],
              var sources = style["sources"] as? [String: Any], var layers = style["layers"] as? [[String: Any]] else {
            throw ValidationError("the fixture's style.json is not a style")
        }
        sources["cjk"] = ["type": "geojson", "data": "\(base)/cjk.geojson"]
        layers += [
            ["id": "country-labels", "type": "symbol", "source": "ne", "source-layer": "countries",
             "layout": ["text-field": ["get", "name"], "text-font": ["literal", ["Noto Sans Regular"]], "text-size": 12]],
            ["id": "city-names", "type": "symbol", "source": "ne", "source-layer": "cities",
             "layout": ["text-field": "{name}", "text-font": ["Noto Sans Bold"], "text-offset": [0, 1], "text-size": 10]],
            ["id": "cjk-labels", "type": "symbol", "source": "cjk",
             "layout": ["text-field": ["get", "name"], "text-font": ["Noto Sans Regular"], "text-size": 14]],
        ]
        style["sources"] = sources
        style["layers"] = layers
        try JSONSerialization.data(withJSONObject: style).write(to: root.appendingPathComponent("style-labelled.json"))
        let cities: [(String, Double, Double)] = [
            ("北京", 116.40, 39.90), ("上海", 121.47, 31.23), ("东京", 139.69, 35.69), ("大阪", 135.50, 34.69),
            ("서울", 126.98, 37.57), ("香港", 114.17, 22.30), ("台北", 121.56, 25.03), ("广州", 113.26, 23.13),
            ("名古屋", 136.91, 35.18), ("札幌", 141.35, 43.06), ("부산", 129.08, 35.18), ("重庆", 106.55, 29.56),
            ("成都", 104.07, 30.67), ("武汉", 114.31, 30.59), ("西安", 108.94, 34.34), ("平壤", 125.75, 39.02),
        ]
        let features = cities.map { name, longitude, latitude in
            ["type": "Feature", "properties": ["name": name], "geometry": ["type": "Point", "coordinates": [longitude, latitude]]] as [String: Any]
        }
        try JSONSerialization.data(withJSONObject: ["type": "FeatureCollection", "features": features])
            .write(to: root.appendingPathComponent("cjk.geojson"))
    }
}
