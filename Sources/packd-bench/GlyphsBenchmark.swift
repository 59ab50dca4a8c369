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
    @Option(help: "Another packd binary (an earlier build): its region pack joins each round, a before/after of the download time.")
    var baselinePackd: String?

    struct Case {
        let name: String
        let style: String
        let region: [String: Any]
    }

    func run() throws {
        let fixture = try ServedNaturalEarth(fixtures: fixtures, name: "glyphs")
        defer { fixture.stop() }
        let (directory, root, base) = (fixture.directory, fixture.root, fixture.base)
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
        var choice: ChoiceReplay?
        var packdCPU: Double
    }

    /// The choice's reads replayed on a region pack's stored file, both ways in the same run:
    /// with the GeoJSON sources parsed at the choice (as packd did before) and with them gathered
    /// while the tiles downloaded (as packd does now: only the tiles and the choice remain on the
    /// pack's critical path; the gathering overlaps the download, its time is shown apart).
    struct ChoiceReplay {
        var tiles = 0
        var tileSeconds = 0.0
        /// Tiles + GeoJSON parsed at the choice + choice (before), wall and CPU seconds.
        var before = 0.0
        var beforeCPU = 0.0
        /// Tiles + choice with the GeoJSON gathered (now), wall and CPU seconds.
        var now = 0.0
        var nowCPU = 0.0
        /// Gathering the GeoJSON sources, off the critical path (overlapping the download).
        var gathering = 0.0
    }

    private func measure(_ benchmarkCase: Case, directory: URL, root: URL, base: String) throws {
        print("== \(benchmarkCase.name)")
        var results: [String: [Round]] = [:]
        for round in 0..<rounds {
            // The baseline's region pack before or after this packd's, alternately (load drifts).
            let variants = baselinePackd == nil ? ["all", "region"]
                : round % 2 == 0 ? ["all", "region", "region-baseline"] : ["all", "region-baseline", "region"]
            for variant in variants {
                let glyphs = variant == "all" ? "all" : "region"
                var region = benchmarkCase.region
                region["glyphs"] = glyphs
                let database = directory.appendingPathComponent("glyphs-\(round)-\(variant).sqlite")
                let executable = variant == "region-baseline" ? baselinePackd.map { URL(fileURLWithPath: $0) } : nil
                let packd = try PackdServeProcess.start(in: directory, database: database,
                                                        arguments: ["--allow-upstream-hosts", "127.0.0.1", "--log-level", "warning"],
                                                        executable: executable)
                let start = Date().timeIntervalSince1970
                let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs",
                                                             json: ["region": region, "name": "glyphs-\(glyphs)"])
                guard created.status == 201, let packID = try created.json()["id"] as? Int else {
                    packd.stop()
                    throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
                }
                let pack = try DownloadBenchmark.waitForPack(packd, packID, pollMilliseconds: 5) { !$0.state.isScheduled }
                let seconds = Date().timeIntervalSince1970 - start
                let packdCPU = packd.cpuSeconds ?? 0
                packd.stop()
                guard pack.state == .complete else { throw ValidationError("the \(variant) pack ended \(pack.state)") }
                let stored = try Self.glyphs(database.path, packID: Int64(packID))
                var result = Round(seconds: seconds, resources: pack.progress.completedResources, bytes: pack.progress.completedBytes,
                                   glyphRanges: stored.ranges, glyphBytes: stored.bytes, skipped: pack.skippedGlyphRanges?.ranges,
                                   packdCPU: packdCPU)
                if variant == "region" {
                    result.choice = try Self.replayChoice(database.path, packID: Int64(packID), region: region, root: root,
                                                          base: base, style: benchmarkCase.style, beforeFirst: round % 2 == 0)
                }
                results[variant, default: []].append(result)
                var line = String(format: "round %d %-15@ %6.2f s  %6lld resources  %8.2f MB  %3d glyph ranges (%7.2f MB)", round,
                                  variant, seconds, result.resources, Double(result.bytes) / 1e6, result.glyphRanges,
                                  Double(result.glyphBytes) / 1e6)
                if let choice = result.choice {
                    let share = { (part: Double, whole: Double) -> Double in part / max(whole, 1e-9) * 100 }
                    line += String(format: "\n    choice over %d tiles (tiles %.3f s): before %.3f s (%.1f %% of the download), now %.3f s (%.1f %%); GeoJSON gathered during the download %.3f s; CPU before %.1f %%, now %.1f %% of packd's",
                                   choice.tiles, choice.tileSeconds, choice.before, share(choice.before, seconds), choice.now,
                                   share(choice.now, seconds), choice.gathering, share(choice.beforeCPU, packdCPU),
                                   share(choice.nowCPU, packdCPU))
                }
                print(line)
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let all = results["all"] ?? [], lean = results["region"] ?? []
        let a = all[all.count / 2], r = lean[lean.count / 2]
        print(String(format: "median: all %.2f s, %lld resources, %.2f MB (glyphs %d ranges, %.2f MB); region %.2f s, %lld resources (%.0f %%), %.2f MB (%.0f %%), glyphs %d ranges (%lld skipped), %.2f MB",
                     median(all.map(\.seconds)), a.resources, Double(a.bytes) / 1e6, a.glyphRanges, Double(a.glyphBytes) / 1e6,
                     median(lean.map(\.seconds)), r.resources, Double(r.resources) / Double(a.resources) * 100,
                     Double(r.bytes) / 1e6, Double(r.bytes) / Double(a.bytes) * 100, r.glyphRanges, r.skipped ?? 0,
                     Double(r.glyphBytes) / 1e6))
        if let baseline = results["region-baseline"] {
            print(String(format: "median: the region pack by the baseline packd %.2f s, by this packd %.2f s (%.3fx)",
                         median(baseline.map(\.seconds)), median(lean.map(\.seconds)),
                         median(lean.map(\.seconds)) / median(baseline.map(\.seconds))))
        }
        let replays = lean.compactMap { round in round.choice.map { (seconds: round.seconds, cpu: round.packdCPU, choice: $0) } }
        print(String(format: "median: the choice on the region pack's critical path: before %.3f s = %.1f %% of its download (CPU %.1f %% of packd's), now %.3f s = %.1f %% (CPU %.1f %%), target < 10 %%; the GeoJSON gathered during the download %.3f s",
                     median(replays.map(\.choice.before)), median(replays.map { $0.choice.before / $0.seconds }) * 100,
                     median(replays.map { $0.choice.beforeCPU / max($0.cpu, 1e-9) }) * 100,
                     median(replays.map(\.choice.now)), median(replays.map { $0.choice.now / $0.seconds }) * 100,
                     median(replays.map { $0.choice.nowCPU / max($0.cpu, 1e-9) }) * 100,
                     median(replays.map(\.choice.gathering))))
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

    /// The reads packd runs to choose the region pack's glyph ranges, timed on its stored file,
    /// both ways (`ChoiceReplay`), in the order `beforeFirst` says (alternated across rounds).
    static func replayChoice(_ path: String, packID: Int64, region: [String: Any], root: URL, base: String,
                             style: String, beforeFirst: Bool) throws -> ChoiceReplay {
        var builder = PlanBuilder(region: try RegionDefinition(json: region))
        try builder.addStyle(try Data(contentsOf: root.appendingPathComponent(style)))
        for url in builder.missingTileJSONURLs {
            try builder.addTileJSON(try Data(contentsOf: root.appendingPathComponent(String(url.dropFirst(base.count + 1)))), url: url)
        }
        guard let subset = builder.plan.glyphSubset else { throw ValidationError("the plan has no glyph subset") }
        let reader = try StoreReader(path: path)
        var replay = ChoiceReplay()
        func timed(_ body: () throws -> Void) rethrows -> (wall: Double, cpu: Double) {
            let (start, cpuStart) = (Date().timeIntervalSince1970, Self.threadCPU())
            try body()
            return (Date().timeIntervalSince1970 - start, Self.threadCPU() - cpuStart)
        }
        func readTiles() throws -> LabelGlyphs {
            let scanner = StoredTileLabels(subset: subset)
            var glyphs = LabelGlyphs()
            var after: Int64 = 0
            replay.tiles = 0
            while true {
                let page = try GlyphChoice.readPage(reader, packID: packID, scanner: scanner, after: after, into: &glyphs)
                replay.tiles += page.tiles
                guard let last = page.lastRowID else { return glyphs }
                after = last
            }
        }
        // What packd gathers while the tiles download: each GeoJSON body as fetched (here, as stored).
        var gathered: [String: LabelGlyphs] = [:]
        replay.gathering = try timed {
            for source in subset.geoJSONSources {
                switch source.data {
                case .inline(let document): gathered[source.id] = subset.glyphs(ofGeoJSON: document, source: source)
                case .url(let url):
                    let body = try reader.resource(.resource(url: url, kind: .source), linkedTo: packID)?.body?.decoded()
                    gathered[source.id] = body.map { GlyphChoice.geoJSONGlyphs($0, source: source, subset: subset) }
                }
            }
        }.wall
        func before() throws {
            (replay.before, replay.beforeCPU) = try timed {
                _ = try GlyphChoice.choose(reader, packID: packID, subset: subset, glyphs: try readTiles())
            }
        }
        func now() throws {
            let tiles = try timed { _ = try readTiles() }
            replay.tileSeconds = tiles.wall
            (replay.now, replay.nowCPU) = try timed {
                _ = try GlyphChoice.choose(reader, packID: packID, subset: subset, glyphs: try readTiles(), gathered: gathered)
            }
        }
        if beforeFirst {
            try before()
            try now()
        } else {
            try now()
            try before()
        }
        return replay
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
