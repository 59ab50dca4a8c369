import Foundation
import PackdTestSupport
import Testing

/// `"glyphs": "region"` in cluster mode: the units store the tiles, the node that claims the
/// pack's glyph-choice unit (once every other unit is done) reads them all and adds the needed
/// ranges as units — so the cluster fetches exactly the ranges one node fetches, each once.
@Suite(.serialized) struct ClusterGlyphsTests {
    static func region(_ upstream: LabelUpstream) -> [String: Any] {
        ["style_url": upstream.styleURL, "bounds": LabelWorld.region, "min_zoom": Double(LabelWorld.minZoom),
         "max_zoom": Double(LabelWorld.maxZoom), "glyphs": "region"]
    }

    @Test func aClusterFetchesExactlyTheGlyphRangesOneNodeFetches() throws {
        // One node (SQLite).
        let alone = try LabelUpstream()
        defer { alone.stop() }
        let node = try PackdServer(capturesOutput: true)
        defer { _ = node.remove() }
        let created = try node.send("POST", "/v1/packs", json: ["region": Self.region(alone), "name": "alone", "start": true])
        let aloneID = try #require(created.json["id"] as? Int, "\(created.body)")
        var single: [String: Any] = [:]
        #expect(eventually(within: 120) {
            single = (try? node.send("GET", "/v1/packs/\(aloneID)").json) ?? [:]
            return ["complete", "failed"].contains(single["state"] as? String ?? "")
        })
        try #require(single["state"] as? String == "complete", "\(single)")

        // Two nodes, units of a few tiles, so both store tiles the choice reads.
        let shared = try LabelUpstream()
        defer { shared.stop() }
        let cluster = try ClusterProcesses(count: 2, arguments: ["--cluster-unit-tiles", "16"])
        let id = try cluster.createPack(on: cluster.nodes[0], region: Self.region(shared))
        let pack = try cluster.waitUntilDone(id, on: cluster.nodes[1])
        try #require(pack["state"] as? String == "complete", "\(pack)\n\(cluster.logs)")

        let wanted = Set(alone.glyphRequests)
        #expect(!wanted.isEmpty && wanted.count < LabelWorld.stacks.count * 256, "\(wanted.count) ranges")
        #expect(Set(shared.glyphRequests) == wanted, "the cluster fetched \(shared.glyphRequests.sorted()), one node \(wanted.sorted())")
        #expect(shared.glyphRequests.count == wanted.count, "each range once")
        #expect(cluster.downloadedPerNode().allSatisfy { $0 > 0 }, "both nodes downloaded: \(cluster.downloadedPerNode())")

        // The same honest counts as one node's: exact once chosen, all of them stored, the same
        // ranges left out.
        let progress = try #require(pack["progress"] as? [String: Any])
        let aloneProgress = try #require(single["progress"] as? [String: Any])
        #expect(progress["expected_is_precise"] as? Bool == true)
        #expect(progress["expected_resources"] as? Int == aloneProgress["expected_resources"] as? Int, "\(progress) \(aloneProgress)")
        #expect(progress["completed_resources"] as? Int == progress["expected_resources"] as? Int, "\(progress)")
        let skipped = try #require(pack["skipped_glyph_ranges"] as? [String: Any])
        let aloneSkipped = try #require(single["skipped_glyph_ranges"] as? [String: Any])
        #expect(skipped["ranges"] as? Int == aloneSkipped["ranges"] as? Int, "\(skipped) \(aloneSkipped)")
    }
}
