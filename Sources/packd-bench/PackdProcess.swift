import ArgumentParser
import Foundation
import Glibc

/// The release `packd serve` built next to `packd-bench`, on an ephemeral loopback port with a
/// database in `directory`; its log goes to `directory/packd.log`.
struct PackdProcess {
    let process: Process
    let port: Int

    static func start(in directory: URL, arguments: [String]) throws -> PackdProcess {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let portFile = directory.appendingPathComponent("packd.port").path
        let log = directory.appendingPathComponent("packd.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = bin.appendingPathComponent("packd")
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--port-file", portFile,
                             "--database", directory.appendingPathComponent("bench.sqlite").path] + arguments
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && process.isRunning {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                return PackdProcess(process: process, port: port)
            }
            usleep(20_000)
        }
        throw ValidationError("packd did not start (is it built next to packd-bench? run swift build -c release)")
    }

    /// VmRSS of the process, in bytes.
    func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) else { return 0 }
        return kib * 1024
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }
}
