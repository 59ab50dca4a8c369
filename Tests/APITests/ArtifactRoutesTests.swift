import API
import Artifacts
import Foundation
import PackdTestSupport
import Store
import Packs
import Testing

/// Artifacts through a real server and database: built once, served with ETag, Repr-Digest,
/// Range and If-Range like a CDN, versions answered 404/410, device updates.
@Suite struct ArtifactRoutesTests {
    static func withServer(maximumBytes: Int? = nil, _ body: (RoutesFixture) throws -> Void) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("packd-scratch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        var sharing = SharingSettings(scratchDirectory: scratch)
        sharing.artifactsMaximumBytes = maximumBytes
        let fixture = try RoutesFixture(sharing: sharing)
        defer {
            fixture.stop()
            fixture.removeFiles()
            try? FileManager.default.removeItem(atPath: scratch)
        }
        try body(fixture)
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        Digest.hex(Digest.sha256(bytes))
    }

    static func builds(_ server: RoutesFixture) -> Int {
        nonisolated(unsafe) let api = server.api!
        return server.server.onLoop { api.artifacts?.buildsStarted ?? -1 }
    }

    static func artifactsDirectory(_ server: RoutesFixture) -> String {
        server.directory.appendingPathComponent("artifacts").path
    }

    @Test func versionedAndCurrentExportsCarryTheDigestAndCacheHeaders() throws {
        try Self.withServer { server in
            let pack = try SharedPackSeed.pack(in: server, maxZoom: 2, tileBytes: 2000)
            let versioned = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export?format=maplibre")
            #expect(versioned.status == 200)
            let digest = Self.sha256(versioned.body)
            #expect(versioned.header("ETag") == "\"\(digest)\"")
            #expect(versioned.header("Repr-Digest") == "sha-256=:\(Data(Digest.sha256(versioned.body)).base64EncodedString()):")
            #expect(versioned.header("Cache-Control") == "public, max-age=31536000, immutable")
            #expect(versioned.header("Accept-Ranges") == "bytes")
            #expect(versioned.header("Content-Length") == String(versioned.body.count))
            #expect(versioned.header("Content-Disposition") == "attachment; filename=\"pack-\(pack)-v1.db\"")
            #expect(try SharedPackSeed.contents(of: 1, at: try ExportRoutesTests.write(versioned.body, in: server.directory, "v1.db"))
                == SharedPackSeed.contents(of: pack, at: server.path))

            let current = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/export")
            #expect(current.status == 200)
            #expect(current.body == versioned.body)
            #expect(current.header("ETag") == versioned.header("ETag"))
            #expect(current.header("Cache-Control") == "no-cache")
            #expect(current.header("Content-Location") == "/v1/packs/\(pack)/versions/1/export?format=maplibre")
            #expect(current.header("Accept-Ranges") == "bytes")

            let head = try BinaryExchange.send(port: server.port, "HEAD", "/v1/packs/\(pack)/versions/1/export")
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.header("Content-Length") == String(versioned.body.count))
            #expect(head.header("ETag") == versioned.header("ETag"))

            for target in ["/v1/packs/\(pack)/versions/1/export", "/v1/packs/\(pack)/export"] {
                let unchanged = try BinaryExchange.send(port: server.port, "GET", target, headers: ["If-None-Match": "\"other\", \(versioned.header("ETag")!)"])
                #expect(unchanged.status == 304, "\(target)")
                #expect(unchanged.body.isEmpty)
                #expect(unchanged.header("ETag") == versioned.header("ETag"))
            }
            // One build served every answer above.
            #expect(Self.builds(server) == 1)

            let mbtiles = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export?format=mbtiles")
            #expect(mbtiles.status == 200)
            #expect(mbtiles.header("ETag") == "\"\(Self.sha256(mbtiles.body))\"")
            #expect(mbtiles.header("ETag") != versioned.header("ETag"))
            #expect(Self.builds(server) == 2)
        }
    }

    /// 200 random ranges (bounded, open-ended and suffix) equal the slices of the whole body;
    /// a range past the end is 416 with `bytes */size`; `If-Range` with an old tag gets it all.
    @Test func rangesAreSlicesOfTheWholeBody() throws {
        try Self.withServer { server in
            let pack = try SharedPackSeed.pack(in: server, maxZoom: 3, tileBytes: 12_000)
            let target = "/v1/packs/\(pack)/versions/1/export?format=maplibre"
            let whole = try BinaryExchange.send(port: server.port, "GET", target)
            let size = whole.body.count
            #expect(size > 1 << 20)
            let etag = try #require(whole.header("ETag"))
            var random = SystemRandomNumberGenerator()
            for index in 0..<200 {
                let header: String
                let expected: Range<Int>
                switch index % 4 {
                case 0:
                    let first = Int.random(in: 0..<size, using: &random)
                    let last = Int.random(in: first..<(size + 1000), using: &random)
                    header = "bytes=\(first)-\(last)"
                    expected = first..<min(last + 1, size)
                case 1:
                    let first = Int.random(in: 0..<size, using: &random)
                    header = "bytes=\(first)-"
                    expected = first..<size
                case 2:
                    let length = Int.random(in: 1...(size + 10), using: &random)
                    header = "bytes=-\(length)"
                    expected = max(0, size - length)..<size
                default:
                    let first = Int.random(in: 0..<size, using: &random)
                    header = "bytes=\(first)-\(first)"
                    expected = first..<(first + 1)
                }
                let part = try BinaryExchange.send(port: server.port, "GET", target, headers: ["Range": header, "If-Range": etag])
                #expect(part.status == 206, "\(header)")
                #expect(part.header("Content-Range") == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/\(size)", "\(header)")
                #expect(part.body == Array(whole.body[expected]), "\(header)")
                #expect(part.header("ETag") == etag)
            }
            let past = try BinaryExchange.send(port: server.port, "GET", target, headers: ["Range": "bytes=\(size)-"])
            #expect(past.status == 416)
            #expect(past.header("Content-Range") == "bytes */\(size)")
            #expect(past.header("Content-Type") == "application/problem+json")
            let old = try BinaryExchange.send(port: server.port, "GET", target, headers: ["Range": "bytes=10-20", "If-Range": "\"0000\""])
            #expect(old.status == 200)
            #expect(old.body == whole.body)
            // Several ranges are not served as multipart: the whole body.
            let several = try BinaryExchange.send(port: server.port, "GET", target, headers: ["Range": "bytes=0-1,5-6"])
            #expect(several.status == 200)
            #expect(several.body.count == size)
            #expect(Self.builds(server) == 1)
        }
    }

    /// A download cut at a random byte and resumed from there yields the advertised SHA-256.
    @Test func aCutDownloadResumesToTheAdvertisedDigest() throws {
        try Self.withServer { server in
            let pack = try SharedPackSeed.pack(in: server, maxZoom: 3, tileBytes: 12_000)
            let target = "/v1/packs/\(pack)/versions/1/export?format=maplibre"
            let head = try BinaryExchange.send(port: server.port, "HEAD", target)
            let size = try #require(Int(head.header("Content-Length") ?? ""))
            let etag = try #require(head.header("ETag"))
            let cut = Int.random(in: 1..<size)
            // The first attempt: the head and `cut` bytes of body, then the connection is dropped.
            let client = try StreamClient(port: server.port)
            try client.send("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            var raw: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            var bodyStart: Int?
            while bodyStart.map({ raw.count - $0 < cut }) ?? true {
                let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                raw += chunk[..<count]
                if bodyStart == nil, let end = raw.indices.dropLast(3).first(where: { raw[$0] == 13 && raw[$0 + 1] == 10 && raw[$0 + 2] == 13 && raw[$0 + 3] == 10 }) {
                    bodyStart = end + 4
                }
            }
            shutdown(client.fd, Int32(SHUT_RDWR))
            let start = try #require(bodyStart)
            let kept = Array(raw[start..<(start + cut)])
            let rest = try BinaryExchange.send(port: server.port, "GET", target, headers: ["Range": "bytes=\(cut)-", "If-Range": etag])
            #expect(rest.status == 206)
            let file = kept + rest.body
            #expect(file.count == size)
            #expect("\"\(Self.sha256(file))\"" == etag)
        }
    }

    /// 50 devices ask for an artifact right after its version exists: one build, 50 × 200,
    /// one digest, no 503 (although only two exports may build at once).
    @Test func aFleetAtOnceGetsOneBuild() throws {
        try Self.withServer { server in
            let pack = try SharedPackSeed.pack(in: server, maxZoom: 4, tileBytes: 4000, state: .inactive)
            // It completes now, as a download ends: version 1 is cut, no artifact of it exists yet.
            let completed = DispatchSemaphore(value: 0)
            server.writer.perform({ database in
                for event in [PackLifecycle.Event.resume, .start, .finished(failedResources: 0)] {
                    _ = try database.transition(pack, event, now: 1_800_000_000)
                }
            }) { _ in completed.signal() }
            #expect(completed.wait(timeout: .now() + 30) == .success)
            let lock = NSLock()
            nonisolated(unsafe) var answers: [BinaryExchange] = []
            let port = server.port
            DispatchQueue.concurrentPerform(iterations: 50) { _ in
                guard let got = try? BinaryExchange.send(port: port, "GET", "/v1/packs/\(pack)/versions/1/export?format=maplibre")
                else { return }
                lock.withLock { answers.append(got) }
            }
            #expect(answers.count == 50)
            #expect(answers.allSatisfy { $0.status == 200 })
            #expect(Set(answers.map { Self.sha256($0.body) }).count == 1)
            #expect(Set(answers.compactMap { $0.header("ETag") }) == ["\"\(Self.sha256(answers[0].body))\""])
            #expect(Self.builds(server) == 1)
        }
    }

    /// The directory removed by hand: the next request builds again, with the same bytes and tag.
    @Test func aRemovedDirectoryIsRebuiltWithTheSameBytes() throws {
        try Self.withServer { server in
            let pack = try SharedPackSeed.pack(in: server, maxZoom: 2, tileBytes: 3000)
            let target = "/v1/packs/\(pack)/versions/1/export?format=maplibre"
            let first = try BinaryExchange.send(port: server.port, "GET", target)
            #expect(first.status == 200)
            try FileManager.default.removeItem(atPath: Self.artifactsDirectory(server))
            let second = try BinaryExchange.send(port: server.port, "GET", target)
            #expect(second.status == 200)
            #expect(Self.builds(server) == 2)
            #expect(second.header("ETag") == first.header("ETag"))
            #expect(second.body == first.body)
        }
    }

    @Test func versionsUpdatesAndRefusals() throws {
        try Self.withServer { server in
            let pack = try SharedPackSeed.pack(in: server)
            let base = "/v1/packs/\(pack)"
            #expect(try server.send("GET", "\(base)/versions/2/export").status == 404)
            #expect(try server.send("GET", "\(base)/versions/0/export").status == 404)
            #expect(try server.send("GET", "\(base)/versions/x/export").status == 404)
            #expect(try server.send("GET", "/v1/packs/999/versions/1/export").status == 404)
            for (query, parameter) in [("format=zip", "format"), ("partial=true", "partial"), ("since=a", "since"),
                                       ("format=mbtiles&since=0", "since"), ("since=1", "since")] {
                let bad = try server.send("GET", "\(base)/versions/1/export?\(query)")
                #expect(bad.status == 400, "\(query)")
                #expect(((bad.json["errors"] as? [[String: Any]])?.first?["parameter"] as? String) == parameter, "\(query)")
            }
            // No delta exists yet (no change records): 422 naming since, and updates says full.
            let delta = try server.send("GET", "\(base)/versions/1/export?since=0")
            #expect(delta.status == 422)
            #expect(((delta.json["errors"] as? [[String: Any]])?.first?["parameter"] as? String) == "since")

            let none = try server.send("GET", "\(base)/updates?from=1&format=maplibre")
            #expect(none.status == 200)
            #expect(none.json["kind"] as? String == "none")
            #expect(none.json["to"] as? Int == 1)
            #expect(none.json["url"] is NSNull)
            let whole = try BinaryExchange.send(port: server.port, "GET", "\(base)/versions/1/export?format=maplibre")
            for from in [0, 7] {
                let full = try server.send("GET", "\(base)/updates?from=\(from)")
                #expect(full.status == 200)
                #expect(full.json["kind"] as? String == "full")
                #expect(full.json["from"] as? Int == from)
                #expect(full.json["url"] as? String == "\(base)/versions/1/export?format=maplibre")
                #expect(full.json["size"] as? Int == whole.body.count)
                #expect(full.json["sha256"] as? String == Self.sha256(whole.body))
            }
            #expect(try server.send("GET", "\(base)/updates").status == 400)
            #expect(try server.send("GET", "\(base)/updates?from=-1").status == 400)
            #expect(try server.send("GET", "\(base)/updates?from=1&colour=red").status == 400)
            #expect(try server.send("GET", "/v1/packs/999/updates?from=0").status == 404)
            let unfinished = try SharedPackSeed.pack(in: server, templates: [SharedPackSeed.vectorTemplate], state: .inactive)
            #expect(try server.send("GET", "/v1/packs/\(unfinished)/updates?from=0").status == 409)
            let noVersion = try server.send("GET", "/v1/packs/\(unfinished)/versions/1/export")
            #expect(noVersion.status == 404)
            #expect(noVersion.body.contains("no version yet"))

            // Deleting the pack removes its artifacts.
            let folder = Self.artifactsDirectory(server) + "/pack-\(pack)"
            #expect(FileManager.default.fileExists(atPath: folder))
            #expect(try server.send("DELETE", base).status == 204)
            #expect(eventually { !FileManager.default.fileExists(atPath: folder) })
        }
    }

    /// A version's artifact outlives the rows it was built from: while a refresh changes the pack,
    /// version 1's file is still served as built; a build that would need the changed rows is
    /// refused with `503` and `Retry-After` (never stale bytes under an immutable URL); once the
    /// refresh ends, version 2 is built from what the pack then holds.
    @Test func aRefreshUnderWayLeavesTheVersionsFileServedAndRefusesToRebuildIt() throws {
        try Self.withServer { server in
            let pack = try SharedPackSeed.pack(in: server)
            let first = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export")
            #expect(first.status == 200)
            #expect(try server.send("POST", "/v1/packs/\(pack)/invalidate").status == 202)
            // The refresh replaces a tile (what the scheduler's revalidation would write).
            let tile = ResourceWrite(key: .tile(TileKey(urlTemplate: SharedPackSeed.pngTemplate, z: 0, x: 0, y: 0)),
                                     content: .body(StoredBody(data: [0x89, 0x50, 0x4E, 0x47, 9, 9, 9], compressed: false)),
                                     packID: pack)
            let written = DispatchSemaphore(value: 0)
            server.writer.perform({ database in _ = try database.transition(pack, .start, now: 1_800_000_000)
                                                database.apply([tile], now: 1_800_000_000) }) { _ in written.signal() }
            #expect(written.wait(timeout: .now() + 30) == .success)

            let again = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export")
            #expect(again.status == 200 && again.header("ETag") == first.header("ETag") && again.body == first.body)
            try FileManager.default.removeItem(atPath: Self.artifactsDirectory(server))
            let rebuilt = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export")
            #expect(rebuilt.status == 503 && rebuilt.header("Retry-After") != nil, "\(String(decoding: rebuilt.body, as: UTF8.self))")

            let completed = DispatchSemaphore(value: 0)
            server.writer.perform({ try $0.transition(pack, .finished(failedResources: 0), now: 1_800_000_100) }) { _ in completed.signal() }
            #expect(completed.wait(timeout: .now() + 30) == .success)
            let two = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/2/export")
            #expect(two.status == 200 && two.header("ETag") != first.header("ETag"))
            #expect(try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/export").header("ETag") == two.header("ETag"))
        }
    }

    /// Beyond the byte budget the least recently used artifact goes; the one just built stays,
    /// and an evicted one is built again on demand.
    @Test func theBudgetEvictsTheLeastRecentlyUsed() throws {
        try Self.withServer(maximumBytes: 150_000) { server in
            let pack = try SharedPackSeed.pack(in: server, maxZoom: 2, tileBytes: 4000)
            let maplibre = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export?format=maplibre")
            #expect(maplibre.status == 200)
            #expect(maplibre.body.count > 75_000)
            let mbtiles = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export?format=mbtiles")
            #expect(mbtiles.status == 200)
            #expect(maplibre.body.count + mbtiles.body.count > 150_000)
            let folder = Self.artifactsDirectory(server) + "/pack-\(pack)/v1"
            #expect(eventually {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                return names.count == 1 && names[0].hasPrefix("mbtiles.")
            })
            let again = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/versions/1/export?format=maplibre")
            #expect(again.body == maplibre.body)
            #expect(Self.builds(server) == 3)
        }
    }
}
