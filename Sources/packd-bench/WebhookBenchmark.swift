import ArgumentParser
import Foundation
import Glibc
import PackdTestSupport
import Packs

/// `packd-bench webhooks`: the release `packd serve` downloading a template region (20,000 tiles
/// from nginx) while small packs complete beside it every `--event-interval`, once with no
/// webhook endpoint (the baseline) and once with `--endpoints` endpoints taking every event, one
/// of them slow (`--slow-answer` per answer) — alternately, `--runs` times each, on fresh
/// databases. Reports the big download's tiles/s of each (median and ratio: the target is
/// within 5 %), and for the fast endpoints the age each delivery reached before it arrived (the
/// oldest pending delivery's age can never exceed its maximum: the target is under 1 s).
struct WebhookBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "A download's tiles/s with and without 10 webhook endpoints (one slow), and the fast endpoints' delivery delay."
    )

    @Option(help: "Tiles of the big download.") var tiles = 20_000
    @Option(help: "Bytes of each tile (incompressible).") var size = 20_480
    @Option(help: "Webhook endpoints taking every event.") var endpoints = 10
    @Option(help: "How long the slow endpoint takes to answer, in ms.") var slowAnswer = 2000
    @Option(help: "A small pack is created every this many ms during the download (each completes: an event).") var eventInterval = 200
    @Option(help: "Runs of each kind, alternated.") var runs = 3
    @Option(help: "packd log level.") var logLevel = "warning"

    func validate() throws {
        guard tiles > 0, endpoints >= 2, runs >= 1, eventInterval >= 10 else {
            throw ValidationError("--tiles, --runs positive, --endpoints at least 2, --event-interval at least 10 ms")
        }
    }

    struct Run {
        var webhooks: Bool
        var tilesPerSecond: Double
        var events: Int
        /// Per fast delivery: from the event (its body's timestamp) to its arrival, in seconds.
        var fastDelays: [Double] = []
        var fastUndelivered = 0
        var slowReceived = 0
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-webhooks-\(getpid())")
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try DownloadBenchmark.incompressibleBytes(size).write(to: root.appendingPathComponent("tile.bin"))
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: 1, accessLog: false,
                                            locations: "location /t/ { try_files /tile.bin =404; }")
        defer { nginx.stop() }
        let template = "http://127.0.0.1:\(nginx.port)/t/{z}/{x}/{y}.pbf"
        let window = try TileWindow(tiles: tiles, zoom: 16)
        print("\(tiles) tiles of \(size) bytes from nginx; a small pack completes every \(eventInterval) ms; "
              + "\(endpoints) endpoints (one answering after \(slowAnswer) ms); \(ProcessInfo.processInfo.activeProcessorCount) cores, "
              + "load \(DownloadBenchmark.loadAverage())")
        var results: [Run] = []
        for index in 0..<(runs * 2) {
            let run = try measure(webhooks: index % 2 == 1, index: index, directory: directory, template: template, window: window)
            results.append(run)
            print(String(format: "run %d %@  %8.0f tiles/s  %4d events%@", index + 1, run.webhooks ? "webhooks   " : "no webhooks",
                         run.tilesPerSecond, run.events,
                         run.webhooks ? String(format: "  fast deliveries %d, delay median %.3f s, max %.3f s, undelivered %d; slow endpoint got %d",
                                               run.fastDelays.count, Self.median(run.fastDelays), run.fastDelays.max() ?? 0,
                                               run.fastUndelivered, run.slowReceived) : ""))
        }
        let base = Self.median(results.filter { !$0.webhooks }.map(\.tilesPerSecond))
        let with = Self.median(results.filter(\.webhooks).map(\.tilesPerSecond))
        let worst = results.filter(\.webhooks).compactMap { $0.fastDelays.max() }.max() ?? 0
        print(String(format: "median tiles/s: %.0f without webhooks, %.0f with: ratio %.3f (target >= 0.95)", base, with, with / base))
        print(String(format: "oldest pending delivery to a fast endpoint, worst run: %.3f s (target < 1 s)", worst))
    }

    private func measure(webhooks: Bool, index: Int, directory: URL, template: String, window: TileWindow) throws -> Run {
        let database = directory.appendingPathComponent("run\(index).sqlite")
        let packd = try PackdServeProcess.start(in: directory, database: database, logName: "packd-\(index).log",
                                                arguments: ["--allow-upstream-hosts", "127.0.0.1", "--log-level", logLevel])
        defer { packd.stop() }
        var receivers: [TestUpstream] = []
        defer { for receiver in receivers { receiver.stop() } }
        if webhooks {
            for number in 0..<endpoints {
                let slow = number == 0
                let answer = TestUpstream.Reply.respond(status: 204)
                let receiver = try TestUpstream { _ in slow ? .delayed(.milliseconds(slowAnswer), answer) : answer }
                receivers.append(receiver)
                let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/webhooks",
                                                             json: ["url": receiver.url("/hook"), "events": ["*"]])
                guard created.status == 201 else { throw ValidationError("POST /v1/webhooks answered \(created.status)") }
            }
        }
        let small: [String: Any] = ["tiles": [template], "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 1]
        let region: [String: Any] = ["tiles": [template], "bounds": window.bounds.geoJSONObject, "min_zoom": 16, "max_zoom": 16]
        let start = Date().timeIntervalSince1970
        let created = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs",
                                                     json: ["region": region, "name": "big"])
        guard created.status == 201, let packID = try created.json()["id"] as? Int else {
            throw ValidationError("POST /v1/packs answered \(created.status)")
        }
        var events = 0
        var nextEvent = start
        var seconds = 0.0
        while true {
            let now = Date().timeIntervalSince1970
            if now >= nextEvent {
                _ = try LoopbackHTTPClient.request(port: packd.port, method: "POST", path: "/v1/packs",
                                                   json: ["region": small, "name": "event \(events)"])
                events += 1
                nextEvent += Double(eventInterval) / 1000
            }
            let pack = try LoopbackHTTPClient.request(port: packd.port, method: "GET", path: "/v1/packs/\(packID)").pack()
            if !pack.state.isScheduled {
                guard pack.state == .complete, pack.progress.completedTiles == tiles else {
                    throw ValidationError("the big pack ended \(pack.state) with \(pack.progress.completedTiles) tiles")
                }
                seconds = Date().timeIntervalSince1970 - start
                break
            }
            usleep(10_000)
        }
        var run = Run(webhooks: webhooks, tilesPerSecond: Double(tiles) / seconds, events: events)
        guard webhooks else { return run }
        // Every event reaches the fast endpoints: small packs (and the big one) completed.
        let expected = events + 1
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, receivers.dropFirst().contains(where: { completions($0) < expected }) { usleep(20_000) }
        // Arrivals are monotonic instants: placed on the wall clock through one reading of both.
        let (wallNow, monotonicNow) = (Date().timeIntervalSince1970, ContinuousClock.now)
        for receiver in receivers.dropFirst() {
            for request in receiver.requests {
                guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
                      let stamp = (body["timestamp"] as? String).flatMap(PreciseTimestamp.init(rfc3339:)) else { continue }
                let arrived = wallNow - request.receivedAt.duration(to: monotonicNow).seconds
                run.fastDelays.append(arrived - Double(stamp.milliseconds) / 1000)
            }
            run.fastUndelivered += max(0, expected - completions(receiver))
        }
        run.slowReceived = receivers.first?.requests.count ?? 0
        return run
    }

    private func completions(_ receiver: TestUpstream) -> Int {
        receiver.requests.count { String(decoding: $0.body, as: UTF8.self).contains("\"type\":\"pack.completed\"") }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
