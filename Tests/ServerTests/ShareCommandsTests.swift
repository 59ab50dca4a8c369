import Foundation
import Glibc
import PackdTestSupport
import Testing

/// `packd export` and `packd import` as real processes against a real `packd serve` with API
/// keys: files written and uploaded, the server's problems printed with a non-zero exit, and
/// the key never in their output.
@Suite struct ShareCommandsTests {
    static let key = "share-commands-key-0123456789abcdef"

    @Test func exportAndImportTalkToARunningServer() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-share-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("write:\(Self.key)\n".utf8).write(to: directory.appendingPathComponent("keys"))
        try Data("\(Self.key)\n".utf8).write(to: directory.appendingPathComponent("key"))
        try Data("wrong-key-0123456789abcdef\n".utf8).write(to: directory.appendingPathComponent("wrong-key"))
        try Data("not a database".utf8).write(to: directory.appendingPathComponent("junk.db"))

        let server = try PackdServer(arguments: ["--api-keys-file", directory.appendingPathComponent("keys").path],
                                     allowsLoopbackUpstream: false)
        defer { server.remove() }
        let port = server.port
        let url = "http://127.0.0.1:\(port)"

        let body = #"{"region": {"tiles": ["https://tiles.example.org/{z}/{x}/{y}.png"], "bounds": [-10, -10, 10, 10], "min_zoom": 0, "max_zoom": 1}, "start": false}"#
        let created = try RawClient(port: port).request(
            "POST /v1/packs HTTP/1.1\r\nAuthorization: Bearer \(Self.key)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        #expect(created.status == 201)

        let key = ["--server", url, "--api-key-file", directory.appendingPathComponent("key").path]
        var runs: [PackdCommand] = []
        // Not complete: the server's 409 is printed, the exit is 64 (refused as given), no file is left.
        let conflict = try PackdCommand.run(["export"] + key + ["1", "-o", "pack.db"], in: directory)
        runs.append(conflict)
        #expect(conflict.status == 64)
        #expect(conflict.stderr.contains("409 Conflict"))
        #expect(conflict.stderr.contains("partial=true"))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("pack.db").path))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("pack.db.part").path))

        let partial = try PackdCommand.run(["export"] + key + ["--partial", "1", "-o", "pack.db"], in: directory)
        runs.append(partial)
        #expect(partial.status == 0)
        let file = try Data(contentsOf: directory.appendingPathComponent("pack.db"))
        #expect(file.starts(with: Array("SQLite format 3\0".utf8)))
        #expect(partial.stdout.contains("(\(file.count) bytes)"))

        let missing = try PackdCommand.run(["export"] + key + ["--format", "pmtiles", "99"], in: directory)
        runs.append(missing)
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("404"))

        // The file goes back in: its one region is the pack it came from, with nothing newer.
        let imported = try PackdCommand.run(["import"] + key + ["pack.db"], in: directory)
        runs.append(imported)
        #expect(imported.status == 0)
        let result = try #require(try JSONSerialization.jsonObject(with: Data(imported.stdout.utf8)) as? [String: Any])
        #expect(result["skipped_regions"] as? Int == 1)
        #expect((result["added"] as? [Any])?.isEmpty == true)

        let junk = try PackdCommand.run(["import"] + key + ["junk.db"], in: directory)
        runs.append(junk)
        #expect(junk.status == 64)
        #expect(junk.stderr.contains("422"))
        #expect(junk.stderr.contains("not an SQLite database"))

        let wrongKey = try PackdCommand.run(["import", "--server", url, "--api-key-file", directory.appendingPathComponent("wrong-key").path, "pack.db"],
                                      in: directory)
        runs.append(wrongKey)
        #expect(wrongKey.status == 77)
        #expect(wrongKey.stderr.contains("401"))
        #expect(!wrongKey.stderr.contains("wrong-key-0123456789abcdef"))

        let noServer = try PackdCommand.run(["export", "--server", "http://127.0.0.1:1", "1"], in: directory)
        #expect(noServer.status == 69)
        #expect(noServer.stderr.contains("failed"))

        for run in runs {
            #expect(!run.stdout.contains(Self.key) && !run.stderr.contains(Self.key))
        }
    }
}
