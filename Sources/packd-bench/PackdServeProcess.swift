import ArgumentParser
import Foundation
import Glibc

/// The release `packd serve` next to packd-bench, on an ephemeral loopback port, with its log in
/// the benchmark's folder: what users run, measured from outside (port, peak RSS from /proc).
struct PackdServeProcess {
    let process: Process
    let port: Int
    /// When `start` launched the process (wall clock, comparable with nginx's `$msec`).
    let launchedAt: Double

    /// Starts `packd serve` with `arguments` after the listen/port-file/database ones and returns
    /// once it has written its port.
    static func start(in directory: URL, database: URL, logName: String = "packd.log",
                      arguments: [String], executable: URL? = nil) throws -> PackdServeProcess {
        try start(in: directory, databaseArgument: database.path, logName: logName, arguments: arguments, executable: executable)
    }

    /// The same with `--database` as given: a file path, or a `postgresql://` URL (cluster mode);
    /// `executable` instead of the packd next to packd-bench (an earlier build, for a before/after).
    static func start(in directory: URL, databaseArgument database: String, logName: String = "packd.log",
                      arguments: [String], executable: URL? = nil) throws -> PackdServeProcess {
        let portFile = directory.appendingPathComponent("\(logName).port").path
        try? FileManager.default.removeItem(atPath: portFile)
        let process = Process()
        ClientCPUs.launch(process, executable ?? binDirectory.appendingPathComponent("packd"),
                          ["serve", "--listen", "127.0.0.1:0", "--port-file", portFile, "--database", database] + arguments)
        let log = directory.appendingPathComponent(logName)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        let launchedAt = Date().timeIntervalSince1970
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && process.isRunning {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8),
               let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                return PackdServeProcess(process: process, port: port, launchedAt: launchedAt)
            }
            usleep(20_000)
        }
        let tail = ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").suffix(5).joined(separator: "\n")
        throw ValidationError("packd did not start (is it built next to packd-bench? run swift build -c release); its log ends:\n\(tail)")
    }

    static var binDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// Peak resident set size so far (`VmHWM`), in bytes; nil once the process is gone.
    var peakResidentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else {
            return nil
        }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
            return kilobytes.map { $0 * 1024 }
        }
        return nil
    }

    /// User plus system CPU seconds the process has used so far.
    var cpuSeconds: Double? { ProcessCPU.seconds(process.processIdentifier) }

    /// SIGTERM (packd suspends its downloads durably) and waits for the exit.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
}
