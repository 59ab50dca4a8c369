import Foundation

/// One run of the built `packd` binary to its end (`packd export`, `packd serve --help`, …) with
/// what it printed. Output goes through files, not pipes, so a chatty command never blocks on a
/// full pipe while the test waits for its exit.
public struct PackdCommand: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String

    /// Runs `packd` with `arguments` in `directory` (relative paths resolve there; `cli.out` and
    /// `cli.err` are written there), or in a temporary directory removed afterwards.
    /// The test's own `PACKD_*` variables are not passed on (a developer's `PACKD_SERVER` or
    /// `PACKD_API_KEY` must not change what a test sees); `environment` adds variables.
    /// `standardInput` is what the command reads (nothing, /dev/null, by default).
    public static func run(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:],
                           standardInput: Data? = nil) throws -> PackdCommand {
        let temporary = directory == nil
            ? FileManager.default.temporaryDirectory.appendingPathComponent("packd-cli-\(UUID().uuidString)") : nil
        if let temporary { try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true) }
        defer { if let temporary { try? FileManager.default.removeItem(at: temporary) } }
        let directory = directory ?? temporary!
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("packd"))
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PACKD_") }.merging(environment) { $1 }
        let out = directory.appendingPathComponent("cli.out"), err = directory.appendingPathComponent("cli.err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        if let standardInput {
            let input = directory.appendingPathComponent("cli.in")
            try standardInput.write(to: input)
            process.standardInput = try FileHandle(forReadingFrom: input)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        try process.run()
        process.waitUntilExit()
        return PackdCommand(status: process.terminationStatus, stdout: try String(contentsOf: out, encoding: .utf8),
                            stderr: try String(contentsOf: err, encoding: .utf8))
    }
}
