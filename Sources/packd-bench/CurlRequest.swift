import ArgumentParser
import Foundation

/// One HTTP request made with the curl command line (benchmarks set up their subject through
/// packd's own API; the measured traffic is wrk's, never this).
enum CurlRequest {
    struct Reply {
        let status: Int
        let body: Data
    }

    static func send(_ url: String, method: String = "GET", json: Data? = nil) throws -> Reply {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("packd-bench-curl-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        var arguments = ["-s", "-o", output.path, "-w", "%{http_code}", "-X", method]
        if json != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
        process.arguments = arguments + [url]
        let status = Pipe()
        let input = Pipe()
        process.standardOutput = status
        process.standardInput = input
        try process.run()
        if let json { input.fileHandleForWriting.write(json) }
        try input.fileHandleForWriting.close()
        let code = String(decoding: status.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, let number = Int(code) else {
            throw ValidationError("curl \(method) \(url) failed (exit \(process.terminationStatus))")
        }
        return Reply(status: number, body: (try? Data(contentsOf: output)) ?? Data())
    }
}
