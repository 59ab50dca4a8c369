import Foundation
import PackdTestSupport
import Testing

/// A tile limit that stops a pack is told twice on its event stream: the `state` event (failed,
/// `tile_limit_exceeded`) and a `tile_limit_exceeded` event with the numbers.
@Suite struct TileLimitEventTests {
    /// The events of `packID` from the log, up to and including its `tile_limit_exceeded` event.
    static func limitEvents(_ server: PackdServer, _ packID: Int) throws -> (state: [String: Any], limit: [String: Any]) {
        let stream = try server.events("/v1/packs/\(packID)/events", headers: ["Last-Event-ID": "0"])
        let events = try stream.events { $0.type == "tile_limit_exceeded" }
        let state = try #require(events.last { $0.type == "state" && $0.data.contains(#""state":"failed""#) })
        let decode = { (data: String) in try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any] ?? [:] }
        return (try decode(state.data), try decode(events.last!.data))
    }

    @Test func thePacksOwnLimitNamesTheTilesItsRegionNeeds() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        // No heartbeats: a missing event ends the read with the stream's 60 s timeout, not never.
        let server = try PackdServer(arguments: ["--event-heartbeat", "3600s"])
        defer { _ = server.remove() }
        let created = try server.exchange("POST", "/v1/packs", json: [
            "region": PackDownloadTests.region(upstream, maxZoom: 4), "limits": ["max_tiles": 10],
        ])
        #expect(created.status == 201)
        let packID = try #require(try created.decodedJSON()["id"] as? Int)
        let pack = server.waitForEnd(packID)
        #expect((pack["error"] as? [String: Any])?["code"] as? String == "tile_limit_exceeded")
        let needed = try PackDownloadTests.planned(upstream, maxZoom: 4).filter { $0.kind == .tile }.count
        let (state, limit) = try Self.limitEvents(server, packID)
        #expect((state["error"] as? [String: Any])?["code"] as? String == "tile_limit_exceeded")
        #expect(limit["pack_id"] as? Int == packID)
        #expect(limit["count"] as? Int == needed)
        #expect(limit["maximum"] as? Int == 10)
    }

    @Test func theServersLimitNamesTheTilesAllPacksHold() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        // No heartbeats: a missing event ends the read with the stream's 60 s timeout, not never.
        let server = try PackdServer(arguments: ["--event-heartbeat", "3600s"])
        defer { _ = server.remove() }
        #expect(try server.exchange("PUT", "/v1/storage/tile-limit", json: ["maximum": 5]).status == 200)
        let created = try server.exchange("POST", "/v1/packs", json: ["region": PackDownloadTests.region(upstream, maxZoom: 4)])
        let packID = try #require(try created.decodedJSON()["id"] as? Int)
        let pack = server.waitForEnd(packID)
        #expect((pack["error"] as? [String: Any])?["code"] as? String == "tile_limit_exceeded")
        let (_, limit) = try Self.limitEvents(server, packID)
        // The region has 17 tiles; the writer refuses the sixth.
        #expect(limit["maximum"] as? Int == 5)
        #expect((limit["count"] as? Int ?? 99) <= 5)
    }
}
