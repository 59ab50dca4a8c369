import ArgumentParser
import Foundation
import Glibc

/// `packd-bench server`: wrk against the release `packd serve` on `/healthz` and, in the same
/// run, against nginx serving a 2-byte static file, so the result is a ratio to a known-fast
/// server on the same loaded machine rather than an absolute claim.
struct ServerBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "Requests/s and p99 of packd /healthz beside nginx (wrk -t2 -c64 -d10s --latency)."
    )

    @Option(help: "wrk duration.") var duration = "10s"
    @Option(help: "wrk connections.") var connections = 64
    @Option(help: "wrk threads.") var threads = 2
    @Option(help: "nginx worker processes (packd runs one loop thread, so 1 compares like with like).")
    var nginxWorkers = 1
    @Option(help: "packd log level; info writes the access log line per request, as nginx's access_log does.")
    var logLevel = "info"
    @Option(help: "Alternate packd and nginx this many times and report the median ratio (a loaded machine drifts between runs).")
    var rounds = 1

    struct Result {
        let name: String
        let requestsPerSecond: Double
        let p99Milliseconds: Double
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-server-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let packd = try PackdServeProcess.start(in: directory, database: directory.appendingPathComponent("bench.sqlite"),
                                                arguments: ["--log-level", logLevel])
        defer { packd.stop() }
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("ok".utf8).write(to: root.appendingPathComponent("ok.txt"))
        // nginx writes an access log as packd does at info level, so both pay for one.
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: nginxWorkers, accessLog: true)
        defer { nginx.stop() }

        print("wrk -t\(threads) -c\(connections) -d\(duration) --latency   (nginx workers: \(nginxWorkers), packd log level: \(logLevel))")
        var ratios: [Double] = []
        for round in 1...max(1, rounds) {
            let packdResult = try runWrk(name: "packd /healthz", url: "http://127.0.0.1:\(packd.port)/healthz")
            let nginxResult = try runWrk(name: "nginx 2-byte file", url: "http://127.0.0.1:\(nginx.port)/ok.txt")
            if rounds > 1 { print("round \(round):") }
            for result in [packdResult, nginxResult] {
                print(String(format: "%-20@ %12.0f req/s   p99 %7.2f ms", result.name as NSString, result.requestsPerSecond, result.p99Milliseconds))
            }
            ratios.append(packdResult.requestsPerSecond / nginxResult.requestsPerSecond)
            print(String(format: "ratio packd/nginx: %.2f   (target >= 0.80; p99 target < 5 ms)", ratios.last ?? 0))
        }
        if ratios.count > 1 {
            let sorted = ratios.sorted()
            print(String(format: "median ratio over %d rounds: %.2f (min %.2f, max %.2f)", sorted.count, sorted[sorted.count / 2], sorted.first ?? 0, sorted.last ?? 0))
        }
    }

    func runWrk(name: String, url: String, headers: [String] = []) throws -> Result {
        let result = try Wrk(threads: threads, connections: connections, duration: duration).run(url, headers: headers)
        return Result(name: name, requestsPerSecond: result.requestsPerSecond, p99Milliseconds: result.p99Milliseconds)
    }

    static func value(after label: String, in output: String) -> Double? {
        for line in output.split(separator: "\n") where line.contains(label) {
            return Double(line.replacingOccurrences(of: label, with: "").trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// wrk prints latency percentiles as `99%    1.23ms` (units us, ms or s).
    static func latency(percentile: String, in output: String) -> Double? {
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0] == percentile else { continue }
            let text = String(parts[1])
            for (suffix, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(suffix) {
                return Double(text.dropLast(suffix.count)).map { $0 * scale }
            }
        }
        return nil
    }
}
