import Foundation
import PackdTestSupport
import Testing

/// Per-host caps are the cluster's: three nodes share one cap, they never add up past it.
@Suite(.serialized) struct ClusterPolitenessTests {
    @Test func threeNodesNeverExceedTheClusterPerHostCap() throws {
        // Slow answers, so transfers pile up to whatever the nodes allow.
        let upstream = try TileServerUpstream(tileDelay: .milliseconds(25))
        let cluster = try ClusterProcesses(count: 3, arguments: ["--cluster-unit-tiles", "256", "--max-transfers-per-host", "12"])
        // z0–7 over the test box: about 1,400 tiles.
        let region: [String: Any] = ["style_url": upstream.styleURL, "bounds": [0, 0, 97.5, 60], "min_zoom": 0, "max_zoom": 7]
        let id = try cluster.createPack(on: cluster.nodes[0], region: region)
        let pack = try cluster.waitUntilDone(id, on: cluster.nodes[0])
        try #require(pack["state"] as? String == "complete", "\(pack)\n\(cluster.logs)")
        let split = cluster.downloadedPerNode()
        print("per-host cap 12 over 3 nodes: at most \(upstream.maxConcurrentRequests) requests in flight at once; split \(split)")
        #expect(upstream.maxConcurrentRequests <= 12, "the upstream never saw more than the cluster's cap")
        #expect(upstream.maxConcurrentRequests > 4, "more than one node's share was in flight at once")
        #expect(split.filter { $0 > 0 }.count >= 2, "the nodes shared the work: \(split)")
    }
}
