import ArgumentParser
import Foundation

/// The download benchmarks' baseline: `curl --parallel` fetching a list of URLs to /dev/null.
enum CurlParallel {
    /// Seconds `curl --parallel --parallel-max maximum` takes for `urls` (the list is written to
    /// `directory`); `arguments` go before the list (`--fail`, request headers).
    static func seconds(urls: [String], maximum: Int, arguments: [String], directory: URL) throws -> Double {
        let list = directory.appendingPathComponent("urls.txt")
        try Data(urls.map { "url = \"\($0)\"\noutput = \"/dev/null\"\n" }.joined().utf8).write(to: list)
        let process = Process()
        ClientCPUs.launch(process, URL(fileURLWithPath: "/usr/bin/curl"),
                          ["--silent", "--parallel", "--parallel-max", "\(maximum)"] + arguments + ["--config", list.path])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = Date().timeIntervalSince1970
        try process.run()
        process.waitUntilExit()
        let elapsed = Date().timeIntervalSince1970 - start
        guard process.terminationStatus == 0 else { throw ValidationError("curl failed with status \(process.terminationStatus)") }
        return elapsed
    }
}
