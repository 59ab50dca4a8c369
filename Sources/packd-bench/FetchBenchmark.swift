import ArgumentParser
import Fetch
import Foundation
import Glibc
import Loop

/// `packd-bench fetch`: packd's Fetch module downloading N generated files from nginx on loopback,
/// beside `curl --parallel` fetching the same URLs to /dev/null in the same run, so the result is
/// a ratio to curl's own best on this machine.
struct FetchBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Files/s and MB/s of Fetch beside curl --parallel against nginx on 127.0.0.1."
    )

    @Option(help: "Number of files served and fetched.") var files = 50_000
    @Option(help: "Size of each file in bytes.") var size = 20_480
    @Option(help: "Transfers in flight (curl --parallel-max and Fetch's per-host limit).") var parallel = 32

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-fetch-\(getpid())")
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var seed: UInt64 = 0x1234_5678
        for index in 0..<files {
            let bytes = (0..<size).map { _ in
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: seed >> 33)
            }
            try Data(bytes).write(to: root.appendingPathComponent("\(index).bin"))
        }
        let nginx = try NginxBaseline.start(in: directory, root: root, workers: 1, accessLog: false)
        defer { nginx.stop() }
        let port = nginx.port
        let urls = (0..<files).map { "http://127.0.0.1:\(port)/\($0).bin" }

        let curlSeconds = try CurlParallel.seconds(urls: urls, maximum: parallel, arguments: [], directory: directory)
        let (fetchSeconds, bytes) = try runFetch(urls: urls)
        let megabytes = Double(files * size) / 1_048_576
        print("\(files) files of \(size) bytes, \(parallel) in flight, nginx on 127.0.0.1")
        print(String(format: "curl --parallel  %9.0f files/s  %8.1f MB/s", Double(files) / curlSeconds, megabytes / curlSeconds))
        print(String(format: "packd Fetch      %9.0f files/s  %8.1f MB/s", Double(files) / fetchSeconds, megabytes / fetchSeconds))
        print(String(format: "ratio packd/curl: %.2f   (bytes received by Fetch: %d)", curlSeconds / fetchSeconds, bytes))
    }

    private func runFetch(urls: [String]) throws -> (Double, Int) {
        let thread = try LoopThread(name: "bench-fetch")
        defer { thread.shutdown() }
        let policy = AddressPolicy(allowedRanges: AddressRange("127.0.0.1/32").map { [$0] } ?? [])
        let configuration = FetchConfiguration(maxTransfers: parallel, maxTransfersPerHost: parallel, addressPolicy: policy)
        let fetcher = try thread.sync { try Fetcher(loop: thread.loop, configuration: configuration) }
        let done = DispatchSemaphore(value: 0)
        let tally = Tally()
        let start = ContinuousClock.now
        try thread.sync {
            for url in urls {
                fetcher.submit(FetchRequest(url: url)) { result in
                    if case let .success(response) = result, response.status == 200 {
                        tally.bytes += response.body.count
                    } else {
                        tally.failures += 1
                    }
                    tally.remaining -= 1
                    if tally.remaining == 0 { done.signal() }
                }
            }
            tally.remaining = urls.count
        }
        done.wait()
        let elapsed = ContinuousClock.now - start
        try thread.sync { fetcher.shutdown() }
        if tally.failures > 0 { print("warning: \(tally.failures) Fetch transfers failed") }
        return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, tally.bytes)
    }

    /// Touched only on the loop thread; a class so the completions can share it.
    private final class Tally: @unchecked Sendable {
        var bytes = 0
        var failures = 0
        var remaining = Int.max
    }
}
