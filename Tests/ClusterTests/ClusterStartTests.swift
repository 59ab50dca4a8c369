import Foundation
import Glibc
import PackdTestSupport
import Testing

/// Nodes that just started, or that join a busy cluster, take their part of the per-host
/// allowances at once — from what the others released, never on top of it.
@Suite(.serialized) struct ClusterStartTests {
    /// Three nodes start (the default 30 s lease: nothing is waited out); 1 s later a pack is
    /// created: its first tile is stored within 2 s, and every node takes part.
    @Test func aPackCreatedJustAfterTheNodesStartBeginsAtOnce() throws {
        let upstream = try TileServerUpstream()
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", "1000"], lease: "30s")
        let startedAt = ContinuousClock.now
        let waited = ContinuousClock.now + .seconds(1)
        while ContinuousClock.now < waited { usleep(10_000) }  // the scenario: a pack 1 s after the start
        let created = ContinuousClock.now
        let id = try cluster.createPack(on: cluster.nodes[1], region: ClusterDownloadTests.region(upstream))
        let answered = ContinuousClock.now - created
        var firstTile: Duration?
        #expect(eventually(within: 30) {
            let progress = (try? cluster.pack(id, on: cluster.nodes[2]))?["progress"] as? [String: Any]
            if (progress?["completed_tiles"] as? Int ?? 0) > 0 { firstTile = .now - created }
            return firstTile != nil
        }, "\(cluster.logs)")
        let (expected, duplicates) = try cluster.expectExact(id, upstream: upstream)
        let split = cluster.downloadedPerNode()
        print("pack created \(created - startedAt) after three nodes started (POST answered in \(answered)): first tile after "
              + "\(firstTile.map { "\($0)" } ?? "never"); "
              + "split \(split) of \(expected); \(duplicates) requested twice")
        // Within 2 s (stretched under sanitizers, like every deadline: `TestTimeScale`).
        #expect(firstTile.map { $0 < TestTimeScale.scaled(.seconds(2)) } == true, "first tile within 2 s of the pack's creation")
        #expect(split.allSatisfy { $0 > 0 }, "every node took part: \(split)")
        #expect(duplicates == 0)
    }

    /// Two nodes download under a per-host cap of 12; a third joins mid-pack: it is downloading
    /// within seconds (no settling time), and the upstream never sees more than 12 requests at
    /// once, before, during or after the handover.
    @Test func aNodeJoiningMidPackTakesItsPartWithoutExceedingTheCap() throws {
        let upstream = try TileServerUpstream(tileDelay: .milliseconds(25))
        let cluster = try ClusterProcesses(count: 2, arguments: ["--cluster-unit-tiles", "500", "--max-transfers-per-host", "12"],
                                           lease: "30s")
        // About 5,000 tiles: z0–8 of the test box, ten seconds or so at 12 in flight.
        var region = ClusterDownloadTests.region(upstream)
        region["max_zoom"] = 8
        let id = try cluster.createPack(on: cluster.nodes[0], region: region)
        #expect(cluster.waitForShare(0.1, of: id, on: cluster.nodes[0]), "\(cluster.logs)")
        let joining = try cluster.start()
        defer { joining.remove() }
        let joined = ContinuousClock.now
        var working: Duration?
        #expect(eventually(within: 30) {
            usleep(20_000)
            if (try? joining.metric("packd_downloaded_resources_total")).flatMap({ $0 }).map({ $0 > 0 }) == true {
                working = .now - joined
            }
            return working != nil
        }, "\(cluster.logs)")
        let (expected, duplicates) = try cluster.expectExact(id, upstream: upstream)
        let status = try joining.send("GET", "/v1/cluster").json
        let parts = (status["nodes"] as? [[String: Any]] ?? []).compactMap { $0["transfer_share"] as? Int }
        print("a third node joined mid-pack: downloading after \(working.map { "\($0)" } ?? "never"); upstream peak "
              + "\(upstream.maxConcurrentRequests) in flight (cap 12); parts now \(parts); \(duplicates) of \(expected) requested twice")
        #expect(working.map { $0 < TestTimeScale.scaled(.seconds(5)) } == true, "the newcomer downloads within seconds of joining")
        #expect(upstream.maxConcurrentRequests <= 12, "the cluster never exceeded its per-host cap")
        #expect(parts.sorted() == [4, 4, 4], "the three nodes hold a third of the cap each: \(parts)")
        #expect(duplicates == 0)
    }
}
