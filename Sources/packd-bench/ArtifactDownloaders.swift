import ArgumentParser
import Foundation

/// The devices of one serving round of `packd-bench artifacts`: `count` clients downloading the
/// artifact at once, each the whole file or a `Range` of it.
///
/// - `wrk`: `count` keep-alive connections downloading again and again for `duration`; the rate is
///   wrk's `Transfer/sec`. With ranges, a Lua script gives every request its own range.
/// - `curl`: `count` curl processes, each downloading once to /dev/null (what a fleet of devices
///   does); the rate is the bytes curl reports over the time from launch until the last exits.
///
/// A range is half the file, starting at an offset that differs from client to client (request to
/// request for wrk), so ranges begin mid-page and the server cannot send one cached answer.
struct ArtifactDownloaders {
    enum Client: String, CaseIterable {
        case wrk, curl
    }

    let client: Client
    let ranged: Bool
    let count: Int
    let threads: Int
    let duration: String
    let size: Int

    /// Parses `wrk`, `curl`, `wrk-range`, `curl-range`.
    init(mode: String, count: Int, threads: Int, duration: String, size: Int) throws {
        let parts = mode.split(separator: "-")
        guard let first = parts.first, let client = Client(rawValue: String(first)),
              parts.count == 1 || (parts.count == 2 && parts[1] == "range") else {
            throw ValidationError("unknown serving mode \(mode): wrk, curl, wrk-range or curl-range")
        }
        self.client = client
        ranged = parts.count == 2
        self.count = count
        self.threads = threads
        self.duration = duration
        self.size = size
    }

    var name: String { "\(count) \(client.rawValue) \(client == .wrk ? "connections" : "processes"), \(ranged ? "a Range each (half the file)" : "whole file")" }

    /// The range client `index` asks for.
    func range(_ index: Int) -> ClosedRange<Int> {
        let start = Int((Double(index % count) + 0.37) * Double(size) / Double(2 * count))
        return start...(start + size / 2 - 1)
    }

    /// Bytes per second the clients received from `url`.
    func run(_ url: String, directory: URL) throws -> Double {
        switch client {
        case .wrk:
            var script: String?
            if ranged {
                let path = directory.appendingPathComponent("ranges.lua")
                // Every request its own offset, spread like `range(_:)`'s.
                try Data("""
                    local n = 0
                    request = function()
                      n = n + 1
                      local start = math.floor((((n * 7 + \(threads)) % \(count)) + 0.37) * \(size) / \(2 * count))
                      return wrk.format("GET", nil, {["Range"] = "bytes=" .. start .. "-" .. (start + \(size / 2 - 1))})
                    end
                    """.utf8).write(to: path)
                script = path.path
            }
            return try Wrk(threads: threads, connections: count, duration: duration, timeout: "600s")
                .run(url, script: script).transferBytesPerSecond
        case .curl:
            return try curl(url)
        }
    }

    private func curl(_ url: String) throws -> Double {
        var processes: [(Process, Pipe)] = []
        let start = Date().timeIntervalSince1970
        for index in 0..<count {
            let process = Process()
            let output = Pipe()
            let range = ranged ? ["--range", "\(range(index).lowerBound)-\(range(index).upperBound)"] : []
            ClientCPUs.launch(process, URL(fileURLWithPath: "/usr/bin/curl"),
                              ["--silent", "--show-error", "--fail", "--output", "/dev/null", "--write-out", "%{size_download}"] + range + [url])
            process.standardOutput = output
            try process.run()
            processes.append((process, output))
        }
        var bytes = 0
        for (process, output) in processes {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0, let received = Int(text) else {
                throw ValidationError("curl \(url) failed: status \(process.terminationStatus), \(text)")
            }
            bytes += received
        }
        let expected = count * (ranged ? size / 2 : size)
        guard bytes == expected else { throw ValidationError("curl received \(bytes) bytes, expected \(expected)") }
        return Double(bytes) / (Date().timeIntervalSince1970 - start)
    }
}
