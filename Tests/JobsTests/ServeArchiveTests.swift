import Foundation
import Glibc
import PackdTestSupport
import Packs
import Plan
import Store
import Testing
import TileFormats

/// PMTiles packs through a real `packd serve`: created over the API, served offline with the
/// archive's server stopped, exported in every format, and killed with SIGKILL mid-download.
@Suite struct ServeArchiveTests {
    /// The API's answers, recorded for the openapi check.
    static func send(_ packd: PackdServer, _ method: String, _ path: String, json: Any? = nil) throws -> BinaryExchange {
        try BinaryExchange.send(port: packd.port, method, path, headers: json == nil ? [:] : ["Content-Type": "application/json"],
                                body: try json.map { Array(try JSONSerialization.data(withJSONObject: $0)) })
    }

    @Test func aPMTilesPackIsServedOfflineAndExportedLikeAnyPack() throws {
        let archive = ArchiveFixture(maxZoom: 5)
        let upstream = try ArchiveUpstream(archive: archive.bytes)
        var upstreamRunning = true
        defer { if upstreamRunning { upstream.stop() } }
        let packd = try PackdServer()
        defer { packd.kill(); _ = packd.remove() }
        let region = ArchiveDownloadTests.region(upstream.url, maxZoom: 5)
        let (key, planned) = try ArchiveDownloadTests.planned(region, archive: archive)

        let estimate = try Self.send(packd, "POST", "/v1/estimates", json: ["region": region])
        #expect(estimate.status == 200 && estimate.json["tiles"] as? Int == planned.count, "\(estimate.json)")
        // The estimate read the header (one request): the pack counts its own from here.
        let (readsBefore, bytesBefore) = (upstream.rangesAsked.count, upstream.bytesServed)
        let created = try Self.send(packd, "POST", "/v1/packs", json: ["region": region, "name": "archive"])
        #expect(created.status == 201, "\(created.json)")
        #expect((created.json["region"] as? [String: Any])?["pmtiles"] as? String == upstream.url)
        let packID = try #require(created.json["id"] as? Int)
        let pack = packd.waitForEnd(packID)
        try #require(pack["state"] as? String == "complete", "\(pack)")
        let progress = try #require(try Self.send(packd, "GET", "/v1/packs/\(packID)").json["progress"] as? [String: Any])
        #expect(progress["completed_tiles"] as? Int == planned.count && progress["expected_resources"] as? Int == planned.count + 1)
        #expect(progress["archive_requests"] as? Int == upstream.rangesAsked.count - readsBefore)
        #expect(progress["archive_bytes"] as? Int == upstream.bytesServed - bytesBefore)
        upstream.stop()
        upstreamRunning = false

        // Offline: the TileJSON points at packd; every tile as the archive has it, absent ones 204.
        let tileJSON = try Self.send(packd, "GET", "/v1/packs/\(packID)/sources/tiles.json")
        #expect(tileJSON.status == 200)
        let tiles = try #require((tileJSON.json["tiles"] as? [String])?.first)
        #expect(tiles.hasSuffix("/v1/packs/\(packID)/tiles/tiles/{z}/{x}/{y}"), "\(tiles)")
        #expect((tileJSON.json["vector_layers"] as? [[String: Any]])?.first?["id"] as? String == "water")
        for tile in planned.prefix(400) {
            let reply = try BinaryExchange.send(port: packd.port, "GET", "/v1/packs/\(packID)/tiles/tiles/\(tile.z)/\(tile.x)/\(tile.y)")
            if let expected = archive.tiles["\(tile.z)/\(tile.x)/\(tile.y)"] {
                #expect(reply.status == 200 && reply.body == expected, "\(tile.z)/\(tile.x)/\(tile.y)")
            } else {
                #expect(reply.status == 204, "\(tile.z)/\(tile.x)/\(tile.y) is not in the archive")
            }
        }
        #expect(try Self.send(packd, "GET", "/v1/packs/\(packID)/style.json").status == 404, "a tiles region has no style")

        // A PMTiles export holds every tile of the archive the region covers, read back with the reader.
        let exported = try BinaryExchange.send(port: packd.port, "GET", "/v1/packs/\(packID)/export?format=pmtiles")
        #expect(exported.status == 200)
        let reader = try PMTilesMemoryReader(exported.body)
        for tile in planned {
            #expect(try reader.tile(z: tile.z, x: tile.x, y: tile.y) == archive.tiles["\(tile.z)/\(tile.x)/\(tile.y)"],
                    "\(tile.z)/\(tile.x)/\(tile.y) in the export")
        }
        // A maplibre export keeps the region (with its archive) and the tiles under the archive's key.
        let maplibre = try BinaryExchange.send(port: packd.port, "GET", "/v1/packs/\(packID)/export?format=maplibre")
        #expect(maplibre.status == 200)
        let file = packd.directory.appendingPathComponent("export.db")
        try Data(maplibre.body).write(to: file)
        let database = try Database(path: file.path, mode: .readOnly)
        let regions = try database.makeStatement("SELECT definition FROM regions")
        #expect(try regions.step())
        #expect(regions.string(at: 0)?.contains(#""pmtiles":"\#(upstream.url)""#) == true, "\(regions.string(at: 0) ?? "")")
        #expect(try database.scalarInt("SELECT COUNT(*) FROM tiles WHERE url_template = '\(key)/{z}/{x}/{y}'") == Int64(planned.count))
        #expect(try database.scalarInt("SELECT COUNT(*) FROM resources WHERE url = '\(key)'") == 1)
        let mbtiles = try BinaryExchange.send(port: packd.port, "GET", "/v1/packs/\(packID)/export?format=mbtiles")
        #expect(mbtiles.status == 200)
    }

    @Test func aStyleWithAPMTilesSourceRendersFromPackdsOwnURLs() throws {
        let archive = ArchiveFixture(maxZoom: 3)
        let upstream = try ArchiveUpstream(archive: archive.bytes)
        defer { upstream.stop() }
        let style = #"{"version": 8, "sources": {"world": {"type": "vector", "url": "pmtiles://\#(upstream.url)"}}, "#
            + #""layers": [{"id": "water", "type": "fill", "source": "world", "source-layer": "water"}]}"#
        upstream.setScript { _, request in request.target == "/style.json" ? .respond(status: 200, body: Array(style.utf8)) : nil }
        let packd = try PackdServer()
        defer { packd.kill(); _ = packd.remove() }
        let styleURL = upstream.url.replacingOccurrences(of: "/maps/world.pmtiles", with: "/style.json")
        let created = try Self.send(packd, "POST", "/v1/packs", json: ["region": ["style_url": styleURL, "bounds": [-180, -85, 180, 85],
                                                                                    "min_zoom": 0, "max_zoom": 3]])
        let packID = try #require(created.json["id"] as? Int)
        try #require(packd.waitForEnd(packID)["state"] as? String == "complete")
        upstream.stop()
        let offline = try Self.send(packd, "GET", "/v1/packs/\(packID)/style.json")
        let source = try #require((offline.json["sources"] as? [String: Any])?["world"] as? [String: Any])
        let tileJSONURL = try #require(source["url"] as? String)
        #expect(tileJSONURL.hasSuffix("/v1/packs/\(packID)/sources/world.json"), "\(tileJSONURL)")
        let tileJSON = try Self.send(packd, "GET", "/v1/packs/\(packID)/sources/world.json")
        let tiles = try #require((tileJSON.json["tiles"] as? [String])?.first)
        #expect(tiles.hasSuffix("/v1/packs/\(packID)/tiles/world/{z}/{x}/{y}"))
        let tile = try BinaryExchange.send(port: packd.port, "GET", "/v1/packs/\(packID)/tiles/world/2/1/1")
        #expect(tile.status == 200 && tile.body == archive.tiles["2/1/1"])
    }

    /// SIGKILL at moments spread over one archive download (slow answers, small ranges: many
    /// requests), restarted on the same database each time: the pack completes exactly, every
    /// tile as the archive has it, and what was stored before a kill is not read again.
    @Test func killedMidDownloadTheArchivePackCompletesExactly() throws {
        let archive = ArchiveFixture(maxZoom: 7)
        let upstream = try ArchiveUpstream(archive: archive.bytes)
        defer { upstream.stop() }
        upstream.setDelay(.milliseconds(15))
        let region = ArchiveDownloadTests.region(upstream.url, maxZoom: 7)
        let (key, planned) = try ArchiveDownloadTests.planned(region, archive: archive)
        let packd = try PackdServer(arguments: ["--archive-max-range", "4096", "--archive-max-gap", "512"])
        defer { packd.kill(); _ = packd.remove() }
        let created = try Self.send(packd, "POST", "/v1/packs", json: ["region": region])
        let packID = try #require(created.json["id"] as? Int)
        var killedAt: [Int] = []
        for index in 1...4 {
            let target = planned.count * index / 5
            var seen = 0
            #expect(eventually {
                guard let pack = packd.pack(packID), let progress = pack["progress"] as? [String: Any] else { return false }
                seen = progress["completed_tiles"] as? Int ?? 0
                return seen >= target || ["complete", "failed"].contains(pack["state"] as? String ?? "")
            })
            usleep(UInt32.random(in: 0...100_000))
            packd.kill()
            killedAt.append(seen)
            try packd.start()
            #expect(eventually {
                (packd.pack(packID)?["progress"] as? [String: Any])?["completed_tiles"] as? Int ?? -1 >= seen
            }, "after restart \(index) the progress went below the \(seen) tiles seen")
        }
        let last = packd.waitForEnd(packID)
        #expect(last["state"] as? String == "complete", "\(last)")
        let progress = try #require(last["progress"] as? [String: Any])
        #expect(progress["completed_tiles"] as? Int == planned.count && progress["completed_resources"] as? Int == planned.count + 1)
        packd.kill()
        #expect(try StoredRows.integrityCheck(path: packd.databasePath) == "ok")
        let recount = try StoreReader(path: packd.databasePath).recountProgress(Int64(packID))
        #expect(recount.completedTiles == Int64(planned.count))
        let reader = try StoreReader(path: packd.databasePath)
        var wrong = 0
        for tile in planned {
            let stored = try reader.resource(.tile(TileKey(urlTemplate: key + "/{z}/{x}/{y}", pixelRatio: 1, z: Int64(tile.z),
                                                           x: Int64(tile.x), y: Int64(tile.y))))
            if try stored?.body?.decoded() != archive.tiles["\(tile.z)/\(tile.x)/\(tile.y)"] { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) tiles missing or different")
        // Little read twice: the ranges in flight at each kill, and the directories of each run.
        let tileBytes = archive.tiles.values.reduce(0) { $0 + $1.count }
        print("archive kill -9 ×4 at tiles \(killedAt): \(upstream.rangesAsked.count) reads, \(upstream.bytesServed) bytes "
              + "(\(planned.count) tiles)")
        #expect(upstream.bytesServed < tileBytes * 2)
    }
}
