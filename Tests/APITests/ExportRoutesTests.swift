import PackdTestSupport
import API
import Foundation
import Store
import Testing

/// `GET /v1/packs/{id}/export` through a real server and database: the file and its headers,
/// HEAD, the refusals, and that no scratch file outlives its answer.
@Suite struct ExportRoutesTests {
    func withServer(uploadLimit: UInt64? = nil, concurrentTransfers: Int = 2, _ body: (RoutesFixture, String) throws -> Void) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("packd-scratch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        var sharing = SharingSettings(scratchDirectory: scratch, concurrentTransfers: concurrentTransfers)
        if let uploadLimit { sharing.importLimits.maximumBytes = uploadLimit }
        let fixture = try RoutesFixture(sharing: sharing)
        defer {
            fixture.stop()
            fixture.removeFiles()
            try? FileManager.default.removeItem(atPath: scratch)
        }
        try body(fixture, scratch)
    }

    static func scratchFiles(_ directory: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    }

    static func write(_ bytes: [UInt8], in directory: URL, _ name: String) throws -> String {
        let path = directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func schema(_ database: Database) throws -> [String] {
        var entries: [String] = []
        try database.makeStatement("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").forEachRow { row in
            entries.append([row.string(at: 0), row.string(at: 1), row.string(at: 2)].map { $0 ?? "" }.joined(separator: "|"))
        }
        return entries
    }

    @Test func maplibreExportIsSchema6WithHeadersAndHEAD() throws {
        try withServer { server, scratch in
            let pack = try SharedPackSeed.pack(in: server)
            let got = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/export?format=maplibre")
            #expect(got.status == 200)
            #expect(got.header("Content-Type") == "application/vnd.sqlite3")
            #expect(got.header("Content-Disposition") == "attachment; filename=\"pack-\(pack).db\"")
            #expect(got.header("Content-Length") == String(got.body.count))
            #expect(got.body.starts(with: Array("SQLite format 3\0".utf8)))

            let file = try Self.write(got.body, in: server.directory, "export.db")
            let database = try Database(path: file, mode: .readOnly)
            #expect(try database.scalarInt("PRAGMA user_version") == 6)
            // Exactly MapLibre's schema 6: every table and index as its DDL creates them, nothing else.
            let reference = try Database(path: server.directory.appendingPathComponent("reference.db").path, mode: .readWriteCreate)
            try reference.execute(OfflineSchema.ddl)
            #expect(try Self.schema(database) == Self.schema(reference))
            #expect(try Self.schema(database).contains { $0.hasPrefix("table|tiles|") })
            #expect(try database.scalarInt("SELECT count(*) FROM regions") == 1)
            #expect(try SharedPackSeed.contents(of: 1, at: file) == SharedPackSeed.contents(of: pack, at: server.path))

            let head = try BinaryExchange.send(port: server.port, "HEAD", "/v1/packs/\(pack)/export")
            #expect(head.status == 200)
            #expect(head.header("Content-Length") == String(got.body.count))
            #expect(head.header("Content-Disposition") == "attachment; filename=\"pack-\(pack).db\"")
            #expect(head.body.isEmpty)
            #expect(eventually { Self.scratchFiles(scratch).isEmpty })
        }
    }

    @Test func archivesNeedOneSourceOrSourceParameter() throws {
        try withServer { server, scratch in
            let pack = try SharedPackSeed.pack(in: server, templates: [SharedPackSeed.pngTemplate, SharedPackSeed.vectorTemplate])
            for format in ["mbtiles", "pmtiles"] {
                let ambiguous = try server.send("GET", "/v1/packs/\(pack)/export?format=\(format)")
                #expect(ambiguous.status == 422)
                #expect(ambiguous.body.contains(SharedPackSeed.vectorTemplate))
                #expect(((ambiguous.json["errors"] as? [[String: Any]])?.first?["parameter"] as? String) == "source")
                #expect(try server.send("GET", "/v1/packs/\(pack)/export?format=\(format)&source=nothing").status == 422)
            }
            let template = SharedPackSeed.pngTemplate.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let mbtiles = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/export?format=mbtiles&source=\(template)")
            #expect(mbtiles.status == 200)
            #expect(mbtiles.header("Content-Disposition") == "attachment; filename=\"pack-\(pack).mbtiles\"")
            let file = try Self.write(mbtiles.body, in: server.directory, "export.mbtiles")
            let database = try Database(path: file, mode: .readOnly)
            #expect(try database.scalarInt("SELECT count(*) FROM tiles") == 5)
            #expect(try database.scalarString("SELECT value FROM metadata WHERE name = 'format'") == "png")

            let pmtiles = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/export?format=pmtiles&source=\(template)")
            #expect(pmtiles.status == 200)
            #expect(pmtiles.header("Content-Type") == "application/vnd.pmtiles")
            #expect(pmtiles.body.starts(with: Array("PMTiles".utf8) + [3]))
            #expect(eventually { Self.scratchFiles(scratch).isEmpty })
        }
    }

    @Test func refusalsNameTheProblem() throws {
        try withServer { server, scratch in
            let unfinished = try SharedPackSeed.pack(in: server, state: .inactive)
            let conflict = try server.send("GET", "/v1/packs/\(unfinished)/export")
            #expect(conflict.status == 409)
            #expect(conflict.body.contains("partial=true"))
            #expect(try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(unfinished)/export?partial=true").status == 200)
            #expect(try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(unfinished)/export?format=mbtiles&partial=true").status == 200)

            for (query, parameter) in [("format=zip", "format"), ("format=maplibre&source=x", "source"), ("partial=yes", "partial"),
                                       ("colour=red", "colour"), ("format=mbtiles&format=pmtiles", "format")] {
                let bad = try server.send("GET", "/v1/packs/\(unfinished)/export?\(query)")
                #expect(bad.status == 400, "\(query)")
                #expect(((bad.json["errors"] as? [[String: Any]])?.first?["parameter"] as? String) == parameter, "\(query)")
            }
            #expect(try server.send("GET", "/v1/packs/999/export").status == 404)
            #expect(try server.send("GET", "/v1/packs/abc/export").status == 404)
            let empty = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#)
            let emptyID = try #require(empty.json["id"] as? Int)
            #expect(try server.send("GET", "/v1/packs/\(emptyID)/export?format=pmtiles&partial=true").status == 409)
            #expect(eventually { Self.scratchFiles(scratch).isEmpty })
        }
    }

    /// A client that goes away mid-download of a scratch export (a pack with no version yet,
    /// `partial=true`) leaves no scratch file behind, and the server keeps answering.
    @Test func scratchFileIsRemovedWhenTheClientDisconnects() throws {
        try withServer { server, scratch in
            // 21 tiles of 256 KiB: more than the socket buffers hold.
            let pack = try SharedPackSeed.pack(in: server, maxZoom: 2, tileBytes: 256 << 10, state: .inactive)
            let client = try StreamClient(port: server.port, receiveBuffer: 4096)
            try client.send("GET /v1/packs/\(pack)/export?format=mbtiles&partial=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            // Only the head and the first bytes of the body: the rest stays unread.
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1024)
            while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
                let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                received += chunk[..<count]
            }
            let head = String(decoding: received, as: UTF8.self)
            #expect(head.hasPrefix("HTTP/1.1 200"))
            let length = head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            #expect(length > 5 << 20)
            #expect(Self.scratchFiles(scratch).count == 1)
            shutdown(client.fd, Int32(SHUT_RDWR))
            #expect(eventually { Self.scratchFiles(scratch).isEmpty })
            #expect(try server.send("GET", "/v1/packs/\(pack)").status == 200)
        }
    }

    /// Scratch exports and imports share a bound: an upload in progress holds the only slot, so
    /// a scratch export gets 503 with Retry-After until the upload is answered. (Artifacts of a
    /// version never wait for it: `ArtifactRoutesTests`.)
    @Test func transfersBeyondTheLimitGet503() throws {
        try withServer(concurrentTransfers: 1) { server, _ in
            let pack = try SharedPackSeed.pack(in: server, state: .inactive)
            let uploader = try StreamClient(port: server.port)
            let length = 100_000
            try uploader.send("POST /v1/imports HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/vnd.sqlite3\r\nContent-Length: \(length)\r\n\r\nSQLite")
            var busy: RoutesFixture.Reply?
            #expect(eventually {
                busy = try? server.send("GET", "/v1/packs/\(pack)/export?partial=true")
                return busy?.status == 503
            })
            #expect(busy?.header("Retry-After") == "5")
            try uploader.send(String(repeating: "x", count: length - 6))
            try uploader.readHead()
            #expect(uploader.status == 422)
            #expect(try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/export?partial=true").status == 200)
        }
    }
}
