import PackdTestSupport
import API
import Foundation
import Store
import Testing

/// `POST /v1/imports` through real servers: a `maplibre` export of one server merged into a
/// second one byte for byte, MapLibre's newer-wins rule on replays, and hostile uploads refused
/// with nothing merged and no scratch file left.
@Suite struct ImportRoutesTests {
    static let sqlite = ["Content-Type": "application/vnd.sqlite3"]

    func withServers(uploadLimit: UInt64? = nil, _ body: (_ source: RoutesFixture, _ target: RoutesFixture, _ scratch: String) throws -> Void) throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("packd-scratch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        var sharing = SharingSettings(scratchDirectory: scratch)
        if let uploadLimit { sharing.importLimits.maximumBytes = uploadLimit }
        let source = try RoutesFixture(sharing: sharing)
        let target = try RoutesFixture(sharing: sharing)
        defer {
            for fixture in [source, target] {
                fixture.stop()
                fixture.removeFiles()
            }
            try? FileManager.default.removeItem(atPath: scratch)
        }
        try body(source, target, scratch)
    }

    func export(_ server: RoutesFixture, _ pack: Int64) throws -> [UInt8] {
        let got = try BinaryExchange.send(port: server.port, "GET", "/v1/packs/\(pack)/export?format=maplibre")
        guard got.status == 200 else { throw ClientFailure(description: "export: \(got.status)") }
        return got.body
    }

    func packCount(_ server: RoutesFixture) throws -> Int {
        (try server.send("GET", "/v1/storage").json["packs"] as? Int) ?? -1
    }

    @Test func exportImportsIntoASecondServerByteForByteAndReplaysFollowNewerWins() throws {
        try withServers { source, target, scratch in
            let pack = try SharedPackSeed.pack(in: source, maxZoom: 2)
            let file = try export(source, pack)

            let first = try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite, body: file)
            #expect(first.status == 200)
            let added = try #require(first.json["added"] as? [[String: Any]])
            #expect(added.count == 1)
            #expect((first.json["updated"] as? [Any])?.isEmpty == true)
            #expect(first.json["tiles"] as? Int == 21)
            #expect(first.json["resources"] as? Int == 1)
            #expect(first.json["skipped_regions"] as? Int == 0)
            let imported = Int64(try #require(added.first?["id"] as? Int))
            #expect(try SharedPackSeed.contents(of: imported, at: target.path) == SharedPackSeed.contents(of: pack, at: source.path))
            // The imported pack exports again to the same rows: a second hop loses nothing either.
            let again = try BinaryExchange.send(port: target.port, "GET", "/v1/packs/\(imported)/export?partial=true")
            let againPath = try ExportRoutesTests.write(again.body, in: target.directory, "again.db")
            #expect(try SharedPackSeed.contents(of: 1, at: againPath) == SharedPackSeed.contents(of: pack, at: source.path))

            // The same file again: nothing newer, nothing merged.
            let replay = try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite, body: file)
            #expect(replay.status == 200)
            #expect((replay.json["added"] as? [Any])?.isEmpty == true)
            #expect((replay.json["updated"] as? [Any])?.isEmpty == true)
            #expect(replay.json["skipped_regions"] as? Int == 1)
            #expect(replay.json["tiles"] as? Int == 0)

            // One tile newer and one older than stored: only the newer one replaces.
            let edited = try ExportRoutesTests.write(file, in: source.directory, "edited.db")
            let database = try Database(path: edited, mode: .readWrite)
            try database.execute("UPDATE tiles SET data = x'89504e470d0a1a0a6e6577', modified = modified + 100 WHERE z = 1 AND x = 0 AND y = 0")
            try database.execute("UPDATE tiles SET data = x'89504e470d0a1a0a6f6c64', modified = modified - 100 WHERE z = 1 AND x = 1 AND y = 1")
            database.finalizeStatements()
            let newer = try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite,
                                                body: Array(try Data(contentsOf: URL(fileURLWithPath: edited))))
            #expect(newer.status == 200)
            #expect(((newer.json["updated"] as? [[String: Any]])?.map { $0["id"] as? Int }) == [Int(imported)])
            #expect(newer.json["tiles"] as? Int == 1)
            let stored = try Database(path: target.path, mode: .readOnly)
            #expect(try stored.scalarString("SELECT hex(data) FROM tiles WHERE z = 1 AND x = 0 AND y = 0") == "89504E470D0A1A0A6E6577")
            #expect(try stored.scalarString("SELECT hex(data) FROM tiles WHERE z = 1 AND x = 1 AND y = 1") != "89504E470D0A1A0A6F6C64")
            #expect(try packCount(target) == 1)
            #expect(eventually { ExportRoutesTests.scratchFiles(scratch).isEmpty })
        }
    }

    /// A dashboard on `/v1/events` sees an import: the added pack's `state` event (as for a
    /// created pack) and a `progress` event of what it holds; a pack an import changes, a
    /// `progress` event with its new counts and its real state.
    /// A database MapLibre Native wrote on a phone (`mapbox://` style, `mapbox://tiles/…` template,
    /// an ambient kind-0 row) imports whole; the pack shows its region exactly as stored (the
    /// recorded response is checked against openapi.yaml's `PackRegion`) and is served offline
    /// from the imported rows: style, TileJSON, every tile, sprites and glyphs.
    @Test func aDatabaseMapLibreWroteIsImportedShownAsStoredAndServedOffline() throws {
        try withServers { _, target, scratch in
            let styleURL = "mapbox://styles/mapbox/streets-v11"
            let path = scratch + "/phone-\(UUID().uuidString).db"
            try MapLibreWrittenDatabase.write(to: path, styleURL: styleURL)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let upload = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            let reply = try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite, body: upload)
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            let added = try #require(reply.json["added"] as? [[String: Any]])
            let packID = try #require(added.first?["id"] as? Int)

            let pack = try target.send("GET", "/v1/packs/\(packID)")
            let region = try #require(pack.json["region"] as? [String: Any])
            #expect(region["style_url"] as? String == styleURL)
            #expect(region["bounds"] as? [Double] == [-20, -10, 20, 10])
            #expect(region["min_zoom"] as? Double == 0 && region["max_zoom"] as? Double == 1)
            #expect(region["include_ideographs"] as? Bool == false)

            let styleReply = try target.sendBytes("GET", "/v1/packs/\(packID)/style.json")
            #expect(styleReply.status == 200)
            let style = try #require(try JSONSerialization.jsonObject(with: Data(styleReply.body)) as? [String: Any])
            let base = "http://127.0.0.1:\(target.port)/v1/packs/\(packID)"
            let sources = try #require(style["sources"] as? [String: [String: Any]])
            #expect(sources["composite"]?["url"] as? String == "\(base)/sources/composite.json")
            #expect(style["sprite"] as? String == "\(base)/sprites/default/sprite")
            #expect(style["glyphs"] as? String == "\(base)/glyphs/{fontstack}/{range}.pbf")
            #expect(!String(decoding: styleReply.body, as: UTF8.self).contains("mapbox://"), "no URL may still point upstream")

            let tileJSON = try target.sendBytes("GET", "/v1/packs/\(packID)/sources/composite.json")
            #expect(tileJSON.status == 200)
            let tiles = (try JSONSerialization.jsonObject(with: Data(tileJSON.body)) as? [String: Any])?["tiles"] as? [String]
            #expect(tiles == ["\(base)/tiles/composite/{z}/{x}/{y}"])
            for tile in MapLibreWrittenDatabase.tiles {
                let served = try target.sendBytes("GET", "/v1/packs/\(packID)/tiles/composite/\(tile.z)/\(tile.x)/\(tile.y)")
                #expect(served.status == 200 && served.body == tile.body, "tile \(tile.z)/\(tile.x)/\(tile.y)")
            }
            let stored = Dictionary(uniqueKeysWithValues: MapLibreWrittenDatabase.resources(styleURL: styleURL).map { ($0.url, $0.body) })
            for suffix in [".json", "@2x.json", ".png", "@2x.png"] {
                let served = try target.sendBytes("GET", "/v1/packs/\(packID)/sprites/default/sprite\(suffix)")
                #expect(served.status == 200 && served.body == stored[MapLibreWrittenDatabase.spriteURL + suffix], "sprite\(suffix)")
            }
            let glyphs = try target.sendBytes("GET", "/v1/packs/\(packID)/glyphs/Open%20Sans%20Regular/0-255.pbf")
            #expect(glyphs.status == 200 && glyphs.body == stored["mapbox://fonts/mapbox/Open%20Sans%20Regular/0-255.pbf"])
        }
    }

    @Test func importsPublishTheirPacksOnTheEventStream() throws {
        try withServers { source, target, _ in
            let pack = try SharedPackSeed.pack(in: source, maxZoom: 2)
            let file = try export(source, pack)
            let stream = try StreamClient(port: target.port)
            try stream.get("/v1/events")
            #expect(stream.status == 200)

            let first = try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite, body: file)
            let added = try #require((first.json["added"] as? [[String: Any]])?.first)
            let id = try #require(added["id"] as? Int)
            let state = try #require(added["state"] as? String)
            let events = try stream.events { $0.type == "progress" }
            #expect(events.map(\.type) == ["state", "progress"])
            let created = try #require(events.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any] })
            #expect(created["pack_id"] as? Int == id && created["state"] as? String == state && created["previous_state"] is NSNull)
            let progress = try #require(events.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any] })
            #expect(progress["pack_id"] as? Int == id && progress["state"] as? String == state)
            #expect((progress["progress"] as? [String: Any])?["completed_tiles"] as? Int == 21)

            // A newer tile in a second upload: the pack changes, and its event says so.
            let edited = try ExportRoutesTests.write(file, in: source.directory, "edited.db")
            let database = try Database(path: edited, mode: .readWrite)
            try database.execute("UPDATE tiles SET data = x'89504e470d0a1a0a6e6577', modified = modified + 100 WHERE z = 1 AND x = 0 AND y = 0")
            database.finalizeStatements()
            let newer = try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite,
                                                body: Array(try Data(contentsOf: URL(fileURLWithPath: edited))))
            #expect(newer.status == 200)
            let update = try #require(try stream.events { $0.type == "progress" }.last)
            let changed = try #require(try? JSONSerialization.jsonObject(with: Data(update.data.utf8)) as? [String: Any])
            #expect(changed["pack_id"] as? Int == id && changed["state"] as? String == state)
        }
    }

    /// A database written the way MapLibre writes one, whose second and third regions do not read
    /// as regions: the upload is refused with a 422 naming each (the `regions` row, then the field
    /// of its definition) and nothing is merged — never a pack shown as `"region": {}`. The first
    /// region alone imports.
    @Test func anUploadWithAnUnreadableRegionDefinitionIsRefusedPointingAtTheRegion() throws {
        try withServers { _, target, scratch in
            let styleURL = "mapbox://styles/mapbox/streets-v11"
            let good = MapLibreWrittenDatabase.definition(styleURL: styleURL)
            let latitudeOutOfRange = #"{"style_url":"\#(styleURL)","min_zoom":0.0,"max_zoom":1.0,"pixel_ratio":1.0,"include_ideographs":false,"bounds":[-10.0,-20.0,95.0,20.0]}"#
            let truncated = String(good.prefix(40))
            let noStyle = #"{"min_zoom":0.0,"max_zoom":1.0,"pixel_ratio":1.0,"bounds":[-10.0,-20.0,10.0,20.0]}"#
            func upload(_ definitions: [String]) throws -> BinaryExchange {
                let path = scratch + "/phone-\(UUID().uuidString).db"
                defer { try? FileManager.default.removeItem(atPath: path) }
                try MapLibreWrittenDatabase.write(to: path, styleURL: styleURL, definitions: definitions)
                return try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite,
                                               body: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            }

            let refused = try upload([good, latitudeOutOfRange, truncated, noStyle])
            #expect(refused.status == 422, "\(String(decoding: refused.body, as: UTF8.self))")
            #expect(refused.header("Content-Type") == "application/problem+json")
            let problem = refused.json
            #expect(problem["type"] as? String == "urn:packd:problem:validation-failed")
            let errors = try #require(problem["errors"] as? [[String: Any]])
            let pointers = errors.compactMap { $0["pointer"] as? String }
            #expect(pointers.contains { $0.hasPrefix("/regions/2/definition/bounds") }, "\(errors)")
            #expect(pointers.contains("/regions/3/definition"), "\(errors)")
            #expect(pointers.contains("/regions/4/definition"), "\(errors)")
            #expect(!pointers.contains { $0.hasPrefix("/regions/1/") }, "the readable region is not named: \(errors)")
            #expect(errors.allSatisfy { ($0["detail"] as? String)?.isEmpty == false })
            #expect(try packCount(target) == 0, "nothing is merged")

            let imported = try upload([good])
            #expect(imported.status == 200, "\(String(decoding: imported.body, as: UTF8.self))")
            let region = try #require((imported.json["added"] as? [[String: Any]])?.first?["region"] as? [String: Any])
            #expect(region["style_url"] as? String == styleURL)
            #expect(try packCount(target) == 1)
        }
    }

    @Test func hostileUploadsAreRefusedAndMergeNothing() throws {
        try withServers(uploadLimit: 256 << 10) { source, target, scratch in
            let pack = try SharedPackSeed.pack(in: source)
            let file = try export(source, pack)
            func post(_ body: [UInt8], headers: [String: String] = Self.sqlite) throws -> BinaryExchange {
                try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: headers, body: body)
            }
            func variant(_ name: String, _ sql: String) throws -> [UInt8] {
                let path = try ExportRoutesTests.write(file, in: source.directory, name)
                let database = try Database(path: path, mode: .readWrite)
                try database.execute(sql)
                database.finalizeStatements()
                return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            }

            let notSQLite = try post(Array(repeating: 0x41, count: 8192))
            #expect(notSQLite.status == 422)
            #expect(String(decoding: notSQLite.body, as: UTF8.self).contains("not an SQLite database"))

            let wrongSchema = try variant("schema.db", "CREATE TABLE extra (id INTEGER)")
            #expect(try post(wrongSchema).status == 422)
            let wrongVersion = try variant("version.db", "PRAGMA user_version = 7")
            #expect(try post(wrongVersion).status == 422)
            let trigger = try variant("trigger.db", "CREATE TRIGGER boom AFTER INSERT ON tiles BEGIN DELETE FROM tiles; END")
            let triggered = try post(trigger)
            #expect(triggered.status == 422)
            #expect(String(decoding: triggered.body, as: UTF8.self).contains("trigger boom"))
            let view = try variant("view.db", "CREATE VIEW peek AS SELECT * FROM tiles")
            #expect(try post(view).status == 422)
            var truncated = file
            truncated.removeLast(file.count / 2)
            #expect(try post(truncated).status == 422)

            #expect(try post(Array(repeating: 0, count: 300 << 10)).status == 413)
            // Without a length the limit is found mid-upload: 413, and the partial file is removed.
            let chunked = try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite,
                                                  body: Array(repeating: 0, count: 2 << 20), chunked: true)
            #expect(chunked.status == 413)
            // A chunked upload under the limit is stored and checked like any other.
            #expect(try BinaryExchange.send(port: target.port, "POST", "/v1/imports", headers: Self.sqlite, body: wrongSchema,
                                            chunked: true).status == 422)
            #expect(try post(file, headers: ["Content-Type": "application/json"]).status == 415)
            #expect(try post(file, headers: [:]).status == 415)

            #expect(try packCount(target) == 0)
            #expect(eventually { ExportRoutesTests.scratchFiles(scratch).isEmpty })
            // Still importing after all that.
            #expect(try post(file).status == 200)
            #expect(try packCount(target) == 1)
        }
    }
}
