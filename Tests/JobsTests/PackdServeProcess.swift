import Foundation
import Glibc
import PackdTestSupport

/// `packd serve` as a child process on an ephemeral 127.0.0.1 port with its own database, allowed
/// to reach the in-process upstream on 127.0.0.1.
final class PackdServeProcess {
    let database: TemporaryDatabase
    let process = Process()
    let port: Int

    struct NotStarted: Error {}

    /// `allowLoopbackUpstream`: `--allow-upstream-hosts 127.0.0.1`, so the in-process upstream is reachable.
    init(allowLoopbackUpstream: Bool = true) throws {
        database = try TemporaryDatabase()
        let portFile = database.directory.appendingPathComponent("port").path
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("packd"))
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--port-file", portFile, "--database", database.path]
            + (allowLoopbackUpstream ? ["--allow-upstream-hosts", "127.0.0.1"] : [])
        process.currentDirectoryURL = database.directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard eventually({ FileManager.default.fileExists(atPath: portFile) }),
              let text = try? String(contentsOfFile: portFile, encoding: .utf8),
              let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            throw NotStarted()
        }
        self.port = port
    }

    /// `/v1/resources?url=…` for `url`, percent-encoded as one query value.
    static func resourcePath(_ url: String, fetch: Bool) -> String {
        "/v1/resources?url=" + (url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + (fetch ? "&fetch=true" : "")
    }

    func send(_ method: String, _ path: String, json: Any? = nil) throws -> HTTPExchange {
        try HTTPExchange.send(port: port, method: method, path: path,
                              body: try json.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data())
    }

    /// Polls the pack until it is `complete` or `failed`; returns its last document.
    func waitForEnd(_ packID: Int) -> [String: Any] {
        var last: [String: Any] = [:]
        _ = eventually {
            guard let pack = try? send("GET", "/v1/packs/\(packID)").json() else { return false }
            last = pack
            return ["complete", "failed"].contains(pack["state"] as? String ?? "")
        }
        return last
    }

    /// SIGTERM, then waits for the exit; the exit status.
    func stop() -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        _ = eventually { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        database.remove()
        return process.terminationStatus
    }
}
