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
        try expectTiles(of: archive, etag: "\"v1\"", pack: id, progress: pack, upstream: upstream, cluster: cluster)
    }

    /// The archive replaced under a two-node download: the nodes' reads meet 412s, each unit
    /// opens the new header, the first moves the cluster's record of the archive to it and the
    /// units done with the old one are redone — the pack completes with the new archive's tiles
    /// only (it used to fail). Then a revalidation during which the archive is replaced again
    /// starts over from the newest header, and the pack ends with its tiles.
    @Test func anArchiveReplacedUnderTwoNodesAndDuringARevalidation() throws {
        let (first, second, third) = (ArchiveFixture(maxZoom: 7, salt: 0), ArchiveFixture(maxZoom: 7, salt: 1),
                                      ArchiveFixture(maxZoom: 7, salt: 2))
        let upstream = try ArchiveUpstream(archive: first.bytes)
        defer { upstream.stop() }
        // Mid-download: units of both nodes have opened the archive and read some of it.
        upstream.setScript { count, _ in
            if count == 40 { upstream.replace(with: second.bytes, etag: "\"v2\"") }
            return nil
        }
        let cluster = try ClusterProcesses(count: 2, arguments: ["--cluster-unit-tiles", "500"])
        let region: [String: Any] = ["pmtiles": upstream.url, "bounds": [-100.0, -50.0, 120.0, 60.0], "min_zoom": 0, "max_zoom": 7]
        let id = try cluster.createPack(on: cluster.nodes[0], region: region)
        let pack = try cluster.waitUntilDone(id, on: cluster.nodes[1], within: 240)
        try #require(pack["state"] as? String == "complete", "\(pack)\n\(cluster.logs)")
        #expect(upstream.rangesAsked.contains { $0.ifMatch == "\"v1\"" } && upstream.rangesAsked.contains { $0.ifMatch == "\"v2\"" })
        try expectTiles(of: second, etag: "\"v2\"", pack: id, progress: pack, upstream: upstream, cluster: cluster)

        let before = upstream.rangesAsked.count
        upstream.replace(with: second.bytes, etag: "\"v2b\"")
        upstream.setScript { count, _ in
            // The conditional request and the new header went out; tiles of v2b are being read.
            if count == before + 6 { upstream.replace(with: third.bytes, etag: "\"v3\"") }
            return nil
        }
        #expect(try cluster.nodes[1].send("POST", "/v1/packs/\(id)/invalidate").status == 202)
        var revalidated: [String: Any] = [:]
        #expect(eventually(within: 240) {
            revalidated = (try? cluster.pack(id, on: cluster.nodes[0])) ?? [:]
            return ["complete", "failed"].contains(revalidated["state"] as? String ?? "")
                && (revalidated["invalidation"] as? [String: Any])?["completed_at"] != nil
        }, "\(revalidated)\n\(cluster.logs)")
        try #require(revalidated["state"] as? String == "complete", "\(revalidated)\n\(cluster.logs)")
        let asked = upstream.rangesAsked.dropFirst(before)
        #expect(asked.contains { $0.ifMatch == "\"v2b\"" } && asked.contains { $0.ifMatch == "\"v3\"" }, "\(asked.map(\.ifMatch))")
        try expectTiles(of: third, etag: "\"v3\"", pack: id, progress: revalidated, upstream: upstream, cluster: cluster)
    }

    /// Every tile of the pack as `archive` has it, with its ETag; the counts exact.
    private func expectTiles(of archive: ArchiveFixture, etag: String, pack id: Int64, progress pack: [String: Any],
                             upstream: ArchiveUpstream, cluster: ClusterProcesses) throws {
        let progress = try #require(pack["progress"] as? [String: Any])
        let tiles = try #require(progress["expected_resources"] as? Int) - 1
        #expect(progress["completed_tiles"] as? Int == tiles && progress["failed_resources"] as? Int == 0, "\(progress)")
        let database = try cluster.connect()
        let key = "pmtiles+" + upstream.url + "/{z}/{x}/{y}"
        let rows = try database.query("""
            SELECT t.z::int8, t.x::int8, t.y::int8, t.data, t.compressed, t.etag FROM region_tiles rt JOIN tiles t ON t.id = rt.tile_id
            JOIN tile_templates tt ON tt.id = t.template_id WHERE rt.region_id = $1 AND tt.url_template = $2
            """, [.int8(id), .text(key)])
        #expect(rows.count == tiles)
        var wrong: [String] = []
        for row in rows {
            let path = "\(try row.int64(0))/\(try row.int64(1))/\(try row.int64(2))"
            let compressed = try row.bool(4)
            let body = try row.bytesOrNil(3).map { try StoredBody(data: $0, compressed: compressed).decoded() }
            let stored = try row.stringOrNil(5)
            if body != archive.tiles[path] || stored != etag { wrong.append(path) }
        }
        #expect(wrong.isEmpty, "\(wrong.count) of \(rows.count) tiles are not the archive's: \(wrong.prefix(10))")
    }
}
