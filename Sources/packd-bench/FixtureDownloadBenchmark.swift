import ArgumentParser
import CSQLite
import Foundation
import Packs
import Glibc

/// `packd-bench download-fixture`: packd downloading the whole Natural Earth fixture (the style,
/// its two TileJSONs, vector tiles z0-6, raster tiles z1-5, sprites and every glyph range) from
/// nginx configured as `serve-ne.sh` configures it, beside `curl --parallel` fetching exactly the
/// URLs packd stored, in the same run.
///
/// Unlike `download`'s uniform tiles, this is a real upstream: small gzip-encoded vector tiles,
/// PNGs, 404s where the fixture has no tile, and a plan built from a style. Each round downloads
/// into a fresh database (a second pack in the same file would link, not download).
struct FixtureDownloadBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download-fixture",
        abstract: "Resources/s and MB/s of packd downloading the Natural Earth fixture beside curl --parallel."
    )

    @Option(help: "The shared fixtures folder (holding ne/ and serve-ne.sh).") var fixtures = "../shared/fixtures"
    @Option(help: "curl --parallel-max.") var parallel = 32
    @Option(help: "Rounds of each; the best of each is reported.") var rounds = 3

    func run() throws {
        let fixture = try ServedNaturalEarth(fixtures: fixtures, name: "fixture")
        defer { fixture.stop() }
        let (directory, root, base) = (fixture.directory, fixture.root, fixture.base)
        // Both clients then read the upstream from the page cache.
        if let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) {
            for case let file as URL in files { _ = try? Data(contentsOf: file) }
        }
        print("Natural Earth fixture from nginx on 127.0.0.1 (as serve-ne.sh), whole world z0-6, 2 cores, load \(DownloadBenchmark.loadAverage())")

        var best = (packd: Double.infinity, curl: Double.infinity)
        var urls: [String] = []
        var stored = (resources: 0, bytes: 0)
        for round in 0..<rounds {
            let database = directory.appendingPathComponent("round-\(round).sqlite")
            let packd = try PackdServeProcess.start(in: directory, database: database,
                                                    arguments: ["--allow-upstream-hosts", "127.0.0.1", "--log-level", "warning"])
            let region: [String: Any] = ["style_url": "\(base)/style.json", "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 6]
            let start = Date().timeIntervalSince1970
            let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs",
                                                         json: ["region": region, "name": "fixture"])
            guard created.status == 201, let packID = try created.json()["id"] as? Int else {
                packd.stop()
                throw ValidationError("POST /v1/packs answered \(created.status): \(String(decoding: created.body, as: UTF8.self))")
            }
            var pack: Pack
            while true {
                guard packd.process.isRunning else { throw ValidationError("packd exited during the download") }
                pack = try LoopbackHTTPClient.request(port: packd.port, method: "GET", path: "/v1/packs/\(packID)").pack()
                if !pack.state.isScheduled { break }
                usleep(5_000)
            }
            let seconds = Date().timeIntervalSince1970 - start
            packd.stop()
            guard pack.state == .complete else {
                throw ValidationError("the pack ended \(pack.state): \(pack.error.map(String.init(describing:)) ?? "")")
            }
            stored = (Int(pack.progress.completedResources), Int(pack.progress.completedBytes))
            if urls.isEmpty { urls = try Self.storedURLs(database.path, packID: Int64(packID)) }
            best.packd = min(best.packd, seconds)
            print(String(format: "round %d packd  %6.3f s  %7.0f resources/s  %6.1f MB/s  (POST to complete; %d resources, %.1f MB)",
                         round, seconds, Double(stored.resources) / seconds, Double(stored.bytes) / seconds / 1e6,
                         stored.resources, Double(stored.bytes) / 1e6))
            // Not --fail: the fixture has no tile at some addresses; both clients get the same 404s.
            let curlSeconds = try CurlParallel.seconds(urls: urls, maximum: parallel, arguments: ["-H", "Accept-Encoding: gzip"],
                                                       directory: directory)
            best.curl = min(best.curl, curlSeconds)
            print(String(format: "round %d curl   %6.3f s  %7.0f resources/s  (--parallel-max %d, same %d URLs, to /dev/null)",
                         round, curlSeconds, Double(urls.count) / curlSeconds, parallel, urls.count))
        }
        print(String(format: "best: packd %.0f resources/s (%.1f MB/s), curl %.0f resources/s; ratio packd/curl %.2f (target >= 0.60)",
                     Double(stored.resources) / best.packd, Double(stored.bytes) / best.packd / 1e6,
                     Double(urls.count) / best.curl, best.curl / best.packd))
    }

    /// Every URL the pack holds: resources as stored, tiles from their template.
    static func storedURLs(_ path: String, packID: Int64) throws -> [String] {
        var db: OpaquePointer?
        defer { sqlite3_close(db) }
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw ValidationError("cannot open \(path)") }
        var urls: [String] = []
        for sql in [
            "SELECT url FROM resources JOIN region_resources ON resource_id = resources.id WHERE region_id = ?1",
            "SELECT replace(replace(replace(url_template, '{z}', z), '{x}', x), '{y}', y) FROM tiles JOIN region_tiles ON tile_id = tiles.id WHERE region_id = ?1",
        ] {
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { throw ValidationError("cannot read \(path)") }
            defer { sqlite3_finalize(statement) }
            sqlite3_bind_int64(statement, 1, packID)
            while sqlite3_step(statement) == SQLITE_ROW {
                urls.append(String(cString: sqlite3_column_text(statement, 0)))
            }
        }
        return urls
    }
}
