import Foundation
import Glibc
import PackdTestSupport
import Testing

/// `packd serve` as a real process: the built binary next to the test bundle.
@Suite struct ServeProcessTests {
    static var packdPath: String { BuiltExecutable.path("packd") }

    private final class Launched {
        let process = Process()
        let stderr = Pipe()
        let portFile: String
        let directory: URL

        /// `openFileLimit` starts packd through `sh -c 'ulimit -n N; exec …'`, so only the child
        /// runs short of file descriptors, never the test process.
        init(arguments: [String], environment: [String: String] = [:], files: [String: String] = [:], openFileLimit: Int? = nil) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-serve-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            for (name, content) in files {
                try Data(content.utf8).write(to: directory.appendingPathComponent(name))
            }
            process.currentDirectoryURL = directory
            portFile = directory.appendingPathComponent("port").path
            let command = ["serve", "--port-file", portFile] + arguments
            if let openFileLimit {
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "ulimit -n \(openFileLimit) && exec \"$0\" \"$@\"", ServeProcessTests.packdPath] + command
            } else {
                process.executableURL = URL(fileURLWithPath: ServeProcessTests.packdPath)
                process.arguments = command
            }
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardError = stderr
            process.standardOutput = FileHandle.nullDevice
            try process.run()
        }

        func port() -> Int? {
            guard eventually({ FileManager.default.fileExists(atPath: portFile) || !process.isRunning }) else { return nil }
            return (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }

        func exitStatus() -> Int32? {
            guard eventually({ !process.isRunning }) else {
                process.terminate()
                return nil
            }
            return process.terminationStatus
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func sigtermLetsASlowStreamFinishThenExitsZero() throws {
        let openapi = FileManager.default.temporaryDirectory.appendingPathComponent("openapi-\(UUID().uuidString).yaml")
        try Data("openapi: 3.1.0\n".utf8).write(to: openapi)
        defer { try? FileManager.default.removeItem(at: openapi) }
        // The flag wins over a bad environment value.
        let packd = try Launched(
            arguments: ["--listen", "127.0.0.1:0", "--debug-routes", "--log-format", "json", "--openapi", openapi.path],
            environment: ["PACKD_LISTEN": "not-an-address"]
        )
        let port = try #require(packd.port())

        let probe = try RawClient(port: port)
        #expect(try probe.request("GET /healthz HTTP/1.1\r\n\r\n").text == #"{"status":"ok"}"#)
        let ready = try probe.request("GET /readyz HTTP/1.1\r\n\r\n")
        #expect(ready.status == 200)
        #expect(ready.text == #"{"status":"ready"}"#)
        let spec = try probe.request("GET /openapi.yaml HTTP/1.1\r\n\r\n")
        #expect(spec.header("Content-Type") == "application/yaml")
        #expect(spec.text == "openapi: 3.1.0\n")

        let client = try RawClient(port: port)
        try client.send("GET /debug/slow-stream?chunks=15&interval_ms=40 HTTP/1.1\r\n\r\n")
        #expect(eventually { (try? client.receiveMore()) == true && String(decoding: client.buffer, as: UTF8.self).contains("chunk 1\n") })
        kill(packd.process.processIdentifier, SIGTERM)
        let response = try client.readResponse()
        #expect(response.text == (1...15).map { "chunk \($0)\n" }.joined())
        #expect(try client.waitForClose())
        #expect(packd.exitStatus() == 0)

        let log = String(decoding: packd.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let lines = log.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.contains { ($0["message"] as? String) == "listening on 127.0.0.1:\(port)" })
        #expect(lines.contains { $0["message"] as? String == "access" && $0["path"] as? String == "/healthz"
            && ($0["status"] as? NSNumber)?.intValue == 200 && ($0["level"] as? String) == "info" })
    }

    /// `make run` starts packd in the repository root: ./openapi.yaml is found without a flag,
    /// and the text log names the bound address.
    @Test func servesOpenAPIFromTheWorkingDirectoryAndLogsTheAddress() throws {
        let packd = try Launched(
            arguments: [],
            environment: ["PACKD_LISTEN": "127.0.0.1:0", "PACKD_LOG_LEVEL": "notice"],
            files: ["openapi.yaml": "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n"]
        )
        let port = try #require(packd.port())
        let client = try RawClient(port: port)
        let spec = try client.request("GET /openapi.yaml HTTP/1.1\r\n\r\n")
        #expect(spec.status == 200)
        #expect(spec.text.hasPrefix("openapi: 3.1.0\ninfo:"))
        #expect(try client.request("HEAD /openapi.yaml HTTP/1.1\r\n\r\n", bodyless: true).header("Content-Length") == String(spec.body.count))
        kill(packd.process.processIdentifier, SIGINT)
        #expect(try client.waitForClose())
        #expect(packd.exitStatus() == 0)
        let log = String(decoding: packd.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("listening on 127.0.0.1:\(port)"))
        // notice level: no access lines.
        #expect(!log.contains("GET /openapi.yaml 200"))
    }

    /// Out of file descriptors, accepts fail: packd says so in the log (a bounded number of
    /// times), keeps serving the connections it has, and accepts again once fds are free.
    @Test func runningOutOfFileDescriptorsIsLoggedAndServingContinues() throws {
        let packd = try Launched(
            arguments: ["--listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "warning", "--idle-timeout", "60s"],
            openFileLimit: 48
        )
        let port = try #require(packd.port())
        let first = try RawClient(port: port)
        #expect(try first.request("GET /healthz HTTP/1.1\r\n\r\n").status == 200)
        // More connections than the child has descriptors for; the kernel completes the
        // handshakes, packd accepts until EMFILE, then libuv closes the surplus.
        var crowd: [RawClient] = []
        for _ in 0..<80 { if let client = try? RawClient(port: port, timeout: 10) { crowd.append(client) } }
        for client in crowd { try? client.send("GET /healthz HTTP/1.1\r\n\r\n") }
        var answered = 0
        for client in crowd where (try? client.readResponse())?.status == 200 { answered += 1 }
        #expect(answered > 0 && answered < crowd.count)
        // The connection opened before the crunch still works.
        #expect(try first.request("GET /healthz HTTP/1.1\r\n\r\n").status == 200)
        crowd = []
        // With descriptors free again, new connections are accepted and answered.
        #expect(eventually {
            guard let fresh = try? RawClient(port: port, timeout: 5) else { return false }
            return (try? fresh.request("GET /healthz HTTP/1.1\r\n\r\n"))?.status == 200
        })
        kill(packd.process.processIdentifier, SIGTERM)
        #expect(packd.exitStatus() == 0)
        let log = String(decoding: packd.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let warnings = log.split(separator: "\n").filter { $0.contains("EMFILE") && $0.contains(#""level":"warning""#) }
        #expect(!warnings.isEmpty)
        // Rate-limited: not one line per refused client.
        #expect(warnings.count <= 5)
    }

    @Test(arguments: [
        (["--listen", "localhost:99999"], [String: String]()),
        (["--log-level", "loud"], [:]),
        (["--log-format", "xml"], [:]),
        (["--header-timeout=-1s"], [:]),
        ([], ["PACKD_MAX_CONNECTIONS": "many"]),
        ([], ["PACKD_LISTEN": "[::1]"]),
    ])
    func badSettingsExitWithUsageError(arguments: [String], environment: [String: String]) throws {
        let packd = try Launched(arguments: arguments, environment: environment)
        #expect(packd.exitStatus() == 64)
        let message = String(decoding: packd.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(message.contains("invalid"))
    }
    /// A port another process holds: `packd serve` says so and exits 1 — after opening (and
    /// migrating) its database, which it closes: no write-ahead log is left behind, as none is
    /// after a clean stop.
    @Test func aTakenPortExitsOneAndClosesTheDatabase() throws {
        let (holder, port) = try #require(listenOnLoopback(backlog: 1))
        defer { close(holder) }
        let packd = try Launched(arguments: ["--listen", "127.0.0.1:\(port)", "--database", "packd.sqlite"])
        #expect(packd.exitStatus() == 1)
        let message = String(decoding: packd.stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(message.contains("cannot listen"), "\(message)")
        let files = try FileManager.default.contentsOfDirectory(atPath: packd.directory.path)
        #expect(files.contains("packd.sqlite"), "the database was opened before listening: \(files)")
        // SQLite removes the -wal when the last connection closes: `SQLiteStore.close()` closes
        // every one, a pool job's reader included (it waits for the job), whatever the timing.
        #expect(!files.contains("packd.sqlite-wal"), "the database was left open: \(files)")
        #expect(!FileManager.default.fileExists(atPath: packd.portFile))
    }
}
