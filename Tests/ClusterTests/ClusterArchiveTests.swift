import Foundation
import Packs
import PackdTestSupport
import Postgres
import Testing

/// A pack read out of a PMTiles archive, its tiles shared out in work units between two real
/// `packd serve` nodes on one PostgreSQL: each unit reads its own tiles with coalesced ranges.
@Suite(.serialized) struct ClusterArchiveTests {
    @Test func twoNodesShareAnArchivePackAndEveryTileIsTheArchives() throws {
        let archive = ArchiveFixture(maxZoom: 7)
        let upstream = try ArchiveUpstream(archive: archive.bytes)
        defer { upstream.stop() }
        let cluster = try ClusterProcesses(count: 2, arguments: ["--cluster-unit-tiles", "500"])
        let region: [String: Any] = ["pmtiles": upstream.url, "bounds": [-100.0, -50.0, 120.0, 60.0], "min_zoom": 0, "max_zoom": 7]
        let id = try cluster.createPack(on: cluster.nodes[0], region: region)
        let pack = try cluster.waitUntilDone(id, on: cluster.nodes[1], within: 240)
        try #require(pack["state"] as? String == "complete", "\(pack)\n\(cluster.logs)")
        let progress = try #require(pack["progress"] as? [String: Any])
        let tiles = try #require(progress["expected_resources"] as? Int) - 1
        #expect(tiles > 5_000 && progress["completed_tiles"] as? Int == tiles && progress["failed_resources"] as? Int == 0)
        #expect((progress["archive_requests"] as? Int ?? 0) > 0)
        #expect((progress["archive_requests"] as? Int ?? .max) < tiles / 10, "\(progress)")
        let split = cluster.downloadedPerNode()
        #expect(split.allSatisfy { $0 > 0 }, "every node read some: \(split)")

        // Every stored tile is the archive's, with its validators.
        let database = try cluster.connect()
        let key = "pmtiles+" + upstream.url + "/{z}/{x}/{y}"
        let rows = try database.query("""
            SELECT t.z::int8, t.x::int8, t.y::int8, t.data, t.compressed, t.etag FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
            JOIN tile_templates tt ON tt.id = t.template_id WHERE rt.region_id = $1 AND tt.url_template = $2
            """, [.int8(id), .text(key)])
        #expect(rows.count == tiles)
        var wrong = 0
        for row in rows {
            let path = "\(try row.int64(0))/\(try row.int64(1))/\(try row.int64(2))"
            let data = try row.bytesOrNil(3)
            let compressed = try row.bool(4)
            let body = try data.map { try StoredBody(data: $0, compressed: compressed).decoded() }
            let etag = try row.stringOrNil(5)
            if body != archive.tiles[path] || etag != "\"v1\"" { wrong += 1 }
        }
        #expect(wrong == 0, "\(wrong) of \(rows.count) tiles differ from the archive's")
    }
}
