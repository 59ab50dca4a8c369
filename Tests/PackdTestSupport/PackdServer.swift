import Foundation
import Glibc

/// A real `packd serve` child process on an ephemeral 127.0.0.1 port with its own database in a
/// temporary directory, by default allowed to download from the in-process upstreams on 127.0.0.1.
/// It can be stopped with SIGTERM or killed with SIGKILL and started again on the same database
/// (ids and downloads that must survive restarts).
public final class PackdServer: @unchecked Sendable {
    public let directory: URL
    public let extraArguments: [String]
    /// Variables added to the test's own environment (e.g. `PACKD_UPSTREAM_RULES_FILE`).
    public let environment: [String: String]
    public let allowsLoopbackUpstream: Bool
    public let logLevel: String
    /// Whether stdout and stderr go to files in `directory` (read with `standardOutput` and
    /// `standardError`) instead of /dev/null; they are appended to across restarts.
    public let capturesOutput: Bool
    public private(set) var port = 0
    private var process: Process?
    /// `--database`: a `postgresql://` URL (cluster mode), nil for a SQLite file in `directory`.
    public let database: String?

    public var databasePath: String { directory.appendingPathComponent("packd.sqlite").path }
    public var pid: Int32 { process?.processIdentifier ?? 0 }
    public var isRunning: Bool { process?.isRunning ?? false }
    public var standardOutputPath: String { directory.appendingPathComponent("stdout.log").path }
    public var standardErrorPath: String { directory.appendingPathComponent("stderr.log").path }
    /// Everything the process (all its starts) wrote to stdout; empty unless `capturesOutput`.
    public var standardOutput: [UInt8] { Array(FileManager.default.contents(atPath: standardOutputPath) ?? Data()) }
    /// Everything the process (all its starts) wrote to stderr; empty unless `capturesOutput`.
    public var standardError: [UInt8] { Array(FileManager.default.contents(atPath: standardErrorPath) ?? Data()) }

    /// Starts packd; `arguments` are added to `serve` (e.g. `--event-heartbeat 200ms`).
    /// `allowsLoopbackUpstream` passes `--allow-upstream-hosts 127.0.0.1`, so the in-process
    /// upstream is reachable.
    /// `directory` holds the database, port file and logs (a fresh temporary one by default).
    public init(arguments: [String] = [], environment: [String: String] = [:], allowsLoopbackUpstream: Bool = true,
                logLevel: String = "warning", capturesOutput: Bool = false, directory: URL? = nil,
                database: String? = nil) throws {
        self.database = database
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("packd-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        extraArguments = arguments
        self.environment = environment
        self.allowsLoopbackUpstream = allowsLoopbackUpstream
        self.logLevel = logLevel
        self.capturesOutput = capturesOutput
        if capturesOutput {
            _ = FileManager.default.createFile(atPath: standardOutputPath, contents: nil)
            _ = FileManager.default.createFile(atPath: standardErrorPath, contents: nil)
        }
        try start()
    }

    deinit {
        if let process, process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }

    /// Starts the process (again, on the same database) and waits until it has written its port.
    public func start() throws {
        let portFile = directory.appendingPathComponent("port")
        try? FileManager.default.removeItem(at: portFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("packd"))
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--port-file", portFile.path, "--database", database ?? databasePath]
            + (allowsLoopbackUpstream ? ["--allow-upstream-hosts", "127.0.0.1"] : [])
            + ["--log-level", logLevel] + extraArguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.currentDirectoryURL = directory
        if capturesOutput {
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: standardOutputPath))
            let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: standardErrorPath))
            output.seekToEndOfFile()
            errors.seekToEndOfFile()
            process.standardOutput = output
            process.standardError = errors
        } else {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        self.process = process
        guard eventually(within: 60, { FileManager.default.fileExists(atPath: portFile.path) }),
              let text = try? String(contentsOf: portFile, encoding: .utf8),
              let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            Glibc.kill(process.processIdentifier, SIGKILL)
            let said = capturesOutput ? ": " + String(decoding: standardError.suffix(2000), as: UTF8.self) : ""
            throw ClientFailure(description: "packd did not start\(said)")
        }
        self.port = port
    }

    /// SIGTERM, then waits for the exit; returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        guard let process, process.isRunning else { return process?.terminationStatus ?? -1 }
        Glibc.kill(process.processIdentifier, SIGTERM)
        if !eventually(within: 60, { !process.isRunning }) { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGKILL (a crash, no shutdown), then waits for the exit.
    public func kill() {
        guard let process, process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Stops the process and deletes its directory; returns the exit status.
    @discardableResult
    public func remove() -> Int32 {
        let status = stop()
        try? FileManager.default.removeItem(at: directory)
        return status
    }

    /// One request on its own connection, recorded for the openapi check. `json` is encoded with
    /// sorted keys, so the same object is the same bytes (as a client's retry is).
    @discardableResult
    public func send(_ method: String, _ target: String, json: Any? = nil, body: [UInt8]? = nil,
                     headers: [String: String] = [:]) throws -> PackdReply {
        let payload = try body ?? json.map { Array(try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys])) } ?? []
        var fields = headers
        if json != nil, !fields.keys.contains(where: { $0.lowercased() == "content-type" }) {
            fields["Content-Type"] = "application/json"
        }
        return try PackdReply.exchange(port: port, method: method, target: target, headers: fields, body: payload)
    }

    /// A fresh event stream on `target` with its head read.
    public func events(_ target: String, headers: [String: String] = [:], receiveBuffer: Int32? = nil) throws -> StreamClient {
        let client = try StreamClient(port: port, timeout: 60, receiveBuffer: receiveBuffer)
        try client.get(target, headers: headers)
        return client
    }

    /// The value of a sample without labels in `/metrics`, e.g. `packd_sse_subscribers`.
    public func metric(_ name: String) throws -> Double? {
        let text = try send("GET", "/metrics").body
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ")[1])
        }
        return nil
    }
}

/// One answer of packd, head and body.
public struct PackdReply: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: String

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
    }

    static func exchange(port: Int, method: String, target: String, headers: [String: String], body: [UInt8]) throws -> PackdReply {
        let client = try StreamClient(port: port, timeout: 60)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) { head += "Content-Length: \(body.count)\r\n" }
        try client.send(head + "\r\n")
        try client.sendBytes(body)
        try client.readHead()
        let text = client.status == 304 || client.status == 204 || method == "HEAD" ? "" : try client.readBody()
        let reply = PackdReply(status: client.status, headers: client.headers, body: text)
        ResponseRecorder.record(method: method, target: target, status: reply.status, headers: reply.headers, body: reply.body)
        return reply
    }
}
