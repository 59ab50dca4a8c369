import Foundation
import PackdTestSupport
import Testing

/// A lean pack through a real `packd serve`: `"glyphs": "region"` and a `start_area` posted,
/// the `start_area_ready` event on the stream before `complete`, and the pack's document saying
/// when the start area was ready and which glyph ranges were left out.
@Suite struct ServeLeanPackTests {
    @Test func leanPackAnnouncesItsStartAreaAndSkipsGlyphs() throws {
        let upstream = try LabelUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let events = try server.events("/v1/events")
        let created = try server.send("POST", "/v1/packs", json: [
            "name": "lean",
            "region": ["style_url": upstream.styleURL, "bounds": LabelWorld.region, "min_zoom": LabelWorld.minZoom,
                       "max_zoom": LabelWorld.maxZoom, "glyphs": "region"] as [String: Any],
            "start_area": ["center": [8.54, 47.37], "radius_m": 20_000] as [String: Any],
        ])
        #expect(created.status == 201, "\(created.body)")
        let packID = try #require(created.json["id"] as? Int)
        let region = try #require(created.json["region"] as? [String: Any])
        #expect(region["glyphs"] as? String == "region")
        #expect((created.json["start_area"] as? [String: Any])?["radius_m"] as? Double == 20_000)
        #expect(created.json["start_area_ready_at"] is NSNull && created.json["skipped_glyph_ranges"] is NSNull)

        let read = try APIProof.readUntilState(events, "complete", packID: packID)
        let ready = read.filter { $0.type == "start_area_ready" }
        #expect(ready.count == 1)
        let data = try #require(ready.first.map(APIProof.data))
        #expect(data["pack_id"] as? Int == packID)
        #expect(((data["start_area"] as? [String: Any])?["center"] as? [Double]) == [8.54, 47.37])
        #expect(data["ready_at"] is String)

        let pack = try server.send("GET", "/v1/packs/\(packID)").json
        #expect(pack["state"] as? String == "complete")
        #expect(pack["start_area_ready_at"] as? String == data["ready_at"] as? String)
        let skipped = try #require(pack["skipped_glyph_ranges"] as? [String: Any])
        let needed = LabelWorld.neededRanges.values.reduce(0) { $0 + $1.count }
        #expect(skipped["ranges"] as? Int == LabelWorld.stacks.count * 256 - needed)
        let progress = try #require(pack["progress"] as? [String: Any])
        #expect(progress["expected_is_precise"] as? Bool == true)
        #expect(progress["expected_resources"] as? Int == progress["completed_resources"] as? Int)
        #expect(upstream.glyphRequests.count == needed)
        #expect(server.stop() == 0)
    }
}
