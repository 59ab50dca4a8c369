import Foundation
import Glibc
import PackdTestSupport
import Postgres
import Testing

/// Nodes die mid-pack (SIGKILL: no shutdown, no release): their leases expire, the others finish.
@Suite(.serialized) struct ClusterFailoverTests {
    @Test func killedNodesUnitsAreFinishedByTheOthers() throws {
        let upstream = try TileServerUpstream()
        let unitTiles = 1000
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", String(unitTiles)])
        let database = try cluster.connect()
        let id = try cluster.createPack(on: cluster.nodes[0], region: ClusterDownloadTests.region(upstream))
        let nodes = cluster.nodes
        var killed: [(node: Int, atTiles: Int, units: Int64, unitTiles: Int64)] = []
        // Two random moments: once a quarter or so is stored, once more than half.
        for share in [Double.random(in: 0.15...0.35), Double.random(in: 0.5...0.7)] {
            var expected = 0
            var completed = 0
            var victim = 0
            #expect(eventually(within: 120) {
                usleep(20_000) // polls over HTTP: a few a second are plenty
                guard let pack = try? cluster.pack(id, on: nodes[victim == 0 ? 1 : 0]),
                      let progress = pack["progress"] as? [String: Any] else { return false }
                expected = (progress["expected_resources"] as? Int ?? 0) - 2
                completed = progress["completed_tiles"] as? Int ?? 0
                return expected > 0 && Double(completed) >= share * Double(expected)
            }, "\(cluster.logs)")
            // A node working on units at that moment, chosen at random.
            var held: [Int: (units: Int64, tiles: Int64)] = [:]
            for (index, node) in nodes.enumerated() {
                let row = try database.query("""
                    SELECT count(*)::int8, coalesce(sum(u.tiles), 0)::int8 FROM packd_work_units u
                    JOIN packd_nodes n ON n.id = u.lease_owner
                    WHERE n.listen_address = $1 AND n.stopped_at IS NULL AND u.state = 'leased'
                    """, [.text("127.0.0.1:\(node.port)")]).first
                held[index] = (try row?.int64(0) ?? 0, try row?.int64(1) ?? 0)
            }
            victim = held.filter { $0.value.units > 0 }.keys.randomElement() ?? Int.random(in: 0..<nodes.count)
            let node = nodes[victim]
            node.kill()
            killed.append((victim, completed, held[victim]?.units ?? 0, held[victim]?.tiles ?? 0))
            // It comes back as a new node (the old one's units wait for their lease to expire).
            try node.start()
        }
        let pack = try cluster.waitUntilDone(id, on: nodes[0], within: 180)
        try #require(pack["state"] as? String == "complete", "\(pack)\n\(cluster.logs)")
        let progress = try #require(pack["progress"] as? [String: Any])
        let expected = try #require(progress["expected_resources"] as? Int) - 2
        #expect(progress["completed_tiles"] as? Int == expected && progress["failed_resources"] as? Int == 0)
        #expect(try database.scalarInt("SELECT count(*)::int8 FROM region_tiles WHERE region_id = $1", [.int8(id)]) == Int64(expected))
        #expect(try database.scalarInt("SELECT sum(linked_tiles)::int8 FROM packd_totals") == Int64(expected))
        let requests = upstream.tileRequests
        #expect(requests.count == expected, "every tile was fetched")
        let duplicates = requests.values.reduce(0) { $0 + $1 - 1 }
        let inFlight = killed.reduce(0) { $0 + $1.unitTiles }
        print("killed \(killed.map { "node \($0.node) at \($0.atTiles) tiles holding \($0.units) units (\($0.unitTiles) tiles)" }); "
              + "\(duplicates) of \(expected) tiles requested twice (\(String(format: "%.2f", 100 * Double(duplicates) / Double(expected))) %)")
        #expect(Int64(duplicates) <= inFlight, "only tiles of the units the killed nodes held were fetched again")
    }
}
