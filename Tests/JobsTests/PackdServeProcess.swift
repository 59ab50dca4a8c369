import Foundation
import Glibc
import PackdTestSupport

/// `packd serve` as a child process on an ephemeral loopback port with its database in
/// `database`, allowed to download from 127.0.0.1 (the in-process upstream).
final class PackdServeProcess {
    let process = Process()
    let port: Int

    struct NotStarted: Error {}

    init(database: TemporaryDatabase, arguments: [String] = []) throws {
        let portFile = database.directory.appendingPathComponent("port").path
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("packd"))
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--port-file", portFile, "--database", database.path,
                             "--allow-upstream-hosts", "127.0.0.1"] + arguments
        process.currentDirectoryURL = database.directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard Self.poll({ FileManager.default.fileExists(atPath: portFile) }),
              let text = try? String(contentsOfFile: portFile, encoding: .utf8),
              let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            throw NotStarted()
        }
        self.port = port
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// SIGTERM, then waits for the exit; true when it exited in time.
    func terminate() -> Bool {
        kill(process.processIdentifier, SIGTERM)
        return Self.poll { !self.process.isRunning }
    }

    /// Re-checks `condition` until it holds or 60 s pass (a condition, not a timed sleep).
    static func poll(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}
