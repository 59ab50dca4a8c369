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

    struct Result {
        let name: String
        let requestsPerSecond: Double
        let p99Milliseconds: Double
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-server-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let packd = try startPackd(in: directory)
        defer { stop(packd.process) }
        let nginx = try startNginx(in: directory)
        defer { stop(nginx.process) }

        let packdResult = try runWrk(name: "packd /healthz", url: "http://127.0.0.1:\(packd.port)/healthz")
        let nginxResult = try runWrk(name: "nginx 2-byte file", url: "http://127.0.0.1:\(nginx.port)/ok.txt")

        print("wrk -t\(threads) -c\(connections) -d\(duration) --latency   (nginx workers: \(nginxWorkers), packd log level: \(logLevel))")
        for result in [packdResult, nginxResult] {
            print(String(format: "%-20@ %12.0f req/s   p99 %7.2f ms", result.name as NSString, result.requestsPerSecond, result.p99Milliseconds))
        }
        print(String(format: "ratio packd/nginx: %.2f   (target >= 0.80; p99 target < 5 ms)", packdResult.requestsPerSecond / nginxResult.requestsPerSecond))
    }

    private var binDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    private func startPackd(in directory: URL) throws -> (process: Process, port: Int) {
        let portFile = directory.appendingPathComponent("packd.port").path
        let process = Process()
        process.executableURL = binDirectory.appendingPathComponent("packd")
        process.arguments = [
            "serve", "--listen", "127.0.0.1:0", "--port-file", portFile, "--log-level", logLevel,
            "--database", directory.appendingPathComponent("bench.sqlite").path,
        ]
        FileManager.default.createFile(atPath: directory.appendingPathComponent("packd.log").path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: directory.appendingPathComponent("packd.log"))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        guard let port = waitForPort(file: portFile, process: process) else {
            throw ValidationError("packd did not start (is it built next to packd-bench? run swift build -c release)")
        }
        return (process, port)
    }

    private func startNginx(in directory: URL) throws -> (process: Process, port: Int) {
        let root = directory.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data("ok".utf8).write(to: root.appendingPathComponent("ok.txt"))
        let port = try freePort()
        let path = directory.path
        let config = """
        worker_processes \(nginxWorkers);
        daemon off;
        pid \(path)/nginx.pid;
        error_log \(path)/nginx-error.log warn;
        user root;
        events { worker_connections 4096; }
        http {
            access_log \(path)/nginx-access.log;
            client_body_temp_path \(path)/body;
            proxy_temp_path \(path)/proxy;
            fastcgi_temp_path \(path)/fastcgi;
            uwsgi_temp_path \(path)/uwsgi;
            scgi_temp_path \(path)/scgi;
            keepalive_requests 1000000;
            server {
                listen 127.0.0.1:\(port);
                root \(root.path);
                location / { }
            }
        }
        """
        let configPath = directory.appendingPathComponent("nginx.conf")
        try Data(config.utf8).write(to: configPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", path, "-e", "\(path)/nginx-error.log", "-c", configPath.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && process.isRunning {
            if canConnect(port: port) { return (process, port) }
            usleep(20_000)
        }
        throw ValidationError("nginx did not start; see \(path)/nginx-error.log")
    }

    private func runWrk(name: String, url: String) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
        process.arguments = ["-t\(threads)", "-c\(connections)", "-d\(duration)", "--latency", url]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let rps = Self.value(after: "Requests/sec:", in: output), let p99 = Self.latency(percentile: "99%", in: output) else {
            throw ValidationError("cannot read wrk output:\n\(output)")
        }
        if output.contains("Non-2xx") || output.contains("Socket errors") {
            print("warning: \(name): wrk reported errors:\n\(output)")
        }
        return Result(name: name, requestsPerSecond: rps, p99Milliseconds: p99)
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

    private func waitForPort(file: String, process: Process) -> Int? {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && process.isRunning {
            if let text = try? String(contentsOfFile: file, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                return port
            }
            usleep(20_000)
        }
        return nil
    }

    private func stop(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    /// A port the kernel considers free right now (nginx cannot report the port it bound).
    private func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ValidationError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    private func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
