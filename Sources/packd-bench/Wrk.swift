import ArgumentParser
import Foundation

/// One `wrk --latency` run: requests/s and the 99th-percentile latency, with wrk's own error
/// report passed on as a warning (a benchmark of errors is not a benchmark).
struct Wrk {
    let threads: Int
    let connections: Int
    let duration: String
    /// wrk's per-request timeout (its default, 2s, counts every large download as an error).
    var timeout: String?

    struct Result {
        let requestsPerSecond: Double
        let p99Milliseconds: Double
        /// Body and head bytes read per second (wrk's `Transfer/sec`, binary units).
        let transferBytesPerSecond: Double
    }

    /// `script`: a wrk Lua script (`-s`), e.g. one that makes each request differently.
    func run(_ url: String, headers: [String] = [], script: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
        var arguments = ["-t\(threads)", "-c\(connections)", "-d\(duration)", "--latency"]
        if let timeout { arguments += ["--timeout", timeout] }
        arguments += headers.flatMap { ["-H", $0] }
        if let script { arguments += ["-s", script] }
        process.arguments = arguments + [url]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let rps = ServerBenchmark.value(after: "Requests/sec:", in: output),
              let p99 = ServerBenchmark.latency(percentile: "99%", in: output) else {
            throw ValidationError("cannot read wrk output:\n\(output)")
        }
        if output.contains("Non-2xx") || output.contains("Socket errors") {
            print("warning: \(url): wrk reported errors:\n\(output)")
        }
        return Result(requestsPerSecond: rps, p99Milliseconds: p99, transferBytesPerSecond: Self.transfer(in: output) ?? 0)
    }

    /// `Transfer/sec:      2.10GB` in bytes per second.
    static func transfer(in output: String) -> Double? {
        for line in output.split(separator: "\n") where line.contains("Transfer/sec:") {
            let text = line.replacingOccurrences(of: "Transfer/sec:", with: "").trimmingCharacters(in: .whitespaces)
            for (suffix, scale) in [("GB", 1024.0 * 1024 * 1024), ("MB", 1024.0 * 1024), ("KB", 1024.0), ("B", 1.0)] where text.hasSuffix(suffix) {
                return Double(text.dropLast(suffix.count)).map { $0 * scale }
            }
        }
        return nil
    }
}
