import Foundation
import Glibc
import PackdTestSupport
import Testing

/// Artifacts with real `packd serve` processes: `kill -9` in the middle of a build leaves nothing
/// that is ever served, and the CLI downloads versions with Range resume and a SHA-256 check.
@Suite struct ArtifactProcessTests {
    static let region = #"{"region": {"tiles": ["https://tiles.example.org/{z}/{x}/{y}.png"], "bounds": [-180, -85, 180, 85], "min_zoom": 0, "max_zoom": 1}, "start": false}"#

    /// A complete pack of zooms 0…`maxZoom` in the server's database.
    static func pack(_ server: PackdServer, maxZoom: Int, tileBytes: Int) throws -> Int64 {
        let created = try server.send("POST", "/v1/packs", body: Array(region.utf8), headers: ["Content-Type": "application/json"])
        let id = try #require(created.json["id"] as? Int)
        try PackSeed.fill(pack: Int64(id), databasePath: server.databasePath, maxZoom: maxZoom, tileBytes: tileBytes)
        return Int64(id)
    }

    static func files(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    static func sha256(_ bytes: [UInt8]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sha-\(UUID().uuidString)").path
        defer { unlink(path) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return String(output.prefix(64))
    }

    /// SIGKILL while the artifact is being written: the unfinished file never had the published
    /// name, the restarted server removes it, and the next request builds the whole file, whose
    /// bytes match its ETag.
    @Test func killDuringABuildServesNoPartialArtifact() throws {
        let server = try PackdServer()
        defer { server.remove() }
        // 5,461 tiles (z0-6) of 24 KiB: a build long enough to be caught in the middle.
        let pack = try Self.pack(server, maxZoom: 6, tileBytes: 24 << 10)
        let folder = server.directory.appendingPathComponent("packd-artifacts/pack-\(pack)/v1").path
        let target = "/v1/packs/\(pack)/versions/1/export?format=maplibre"
        let client = try StreamClient(port: server.port)
        try client.send("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(eventually(within: 120) { Self.files(folder).contains { $0.hasPrefix(".building-") } })
        server.kill()
        let left = Self.files(folder)
        #expect(left.contains { $0.hasPrefix(".building-") })
        #expect(!left.contains { $0.hasPrefix("maplibre.") }, "\(left)")

        try server.start()
        #expect(!Self.files(folder).contains { $0.hasPrefix(".building-") })
        let got = try BinaryExchange.send(port: server.port, "GET", target)
        #expect(got.status == 200)
        let digest = try Self.sha256(got.body)
        #expect(got.header("ETag") == "\"\(digest)\"")
        #expect(Self.files(folder) == ["maplibre.\(digest).db"])
        #expect(got.body.count > 5461 * (24 << 10))
    }

    @Test func theCommandLineResumesAndChecksDownloads() throws {
        let server = try PackdServer()
        defer { server.remove() }
        let pack = try Self.pack(server, maxZoom: 3, tileBytes: 8000)
        let directory = server.directory
        let connection = ["--server", "http://127.0.0.1:\(server.port)"]
        let whole = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export?format=maplibre")
        let etag = try #require(whole.header("ETag"))
        let digest = try Self.sha256(whole.body)

        let fresh = try PackdCommand.run(["export"] + connection + ["--version", "1", "\(pack)"], in: directory)
        #expect(fresh.status == 0, "\(fresh.stderr)")
        #expect(fresh.stdout.contains("sha256 \(digest) checked"))
        let file = directory.appendingPathComponent("pack-\(pack)-v1.db")
        #expect(try Array(Data(contentsOf: file)) == whole.body)

        // A download cut at a random byte (what a killed run leaves) is resumed from there.
        let cut = Int.random(in: 1..<whole.body.count)
        let part = directory.appendingPathComponent("resumed.db.part")
        try Data(whole.body[..<cut]).write(to: part)
        try Data((etag + "\n").utf8).write(to: directory.appendingPathComponent("resumed.db.part.etag"))
        let resumed = try PackdCommand.run(["export"] + connection + ["--version", "1", "-o", "resumed.db", "\(pack)"], in: directory)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("resumed at byte \(cut)"))
        #expect(try Array(Data(contentsOf: directory.appendingPathComponent("resumed.db"))) == whole.body)
        #expect(!FileManager.default.fileExists(atPath: part.path))

        // Bytes that are not the artifact's: the SHA-256 check refuses the file and removes it.
        var wrong = Array(whole.body[..<cut])
        wrong[cut / 2] ^= 0xFF
        try Data(wrong).write(to: directory.appendingPathComponent("wrong.db.part"))
        try Data((etag + "\n").utf8).write(to: directory.appendingPathComponent("wrong.db.part.etag"))
        let refused = try PackdCommand.run(["export"] + connection + ["--version", "1", "-o", "wrong.db", "\(pack)"], in: directory)
        #expect(refused.status == 70)
        #expect(refused.stderr.contains("SHA-256"))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("wrong.db").path))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("wrong.db.part").path))

        // A partial file of another artifact (an old tag): If-Range gets the whole file anew.
        try Data(whole.body[..<cut].reversed()).write(to: directory.appendingPathComponent("old.db.part"))
        try Data(("\"" + String(repeating: "0", count: 64) + "\"\n").utf8).write(to: directory.appendingPathComponent("old.db.part.etag"))
        let replaced = try PackdCommand.run(["export"] + connection + ["--version", "1", "-o", "old.db", "\(pack)"], in: directory)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(!replaced.stdout.contains("resumed"))
        #expect(try Array(Data(contentsOf: directory.appendingPathComponent("old.db"))) == whole.body)

        let gone = try PackdCommand.run(["export"] + connection + ["--version", "2", "\(pack)"], in: directory)
        #expect(gone.status == 64)
        #expect(gone.stderr.contains("404"))

        let info = try PackdCommand.run(["update-info"] + connection + ["--from", "0", "\(pack)"], in: directory)
        #expect(info.status == 0, "\(info.stderr)")
        let update = try #require(try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any])
        #expect(update["kind"] as? String == "full")
        #expect(update["sha256"] as? String == digest)
        #expect(update["size"] as? Int == whole.body.count)
        #expect(update["url"] as? String == "/v1/packs/\(pack)/versions/1/export?format=maplibre")
        let current = try PackdCommand.run(["update-info"] + connection + ["--from", "1", "\(pack)"], in: directory)
        #expect(current.stdout.contains(#""kind":"none""#))
    }
}
