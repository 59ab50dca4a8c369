import Foundation
import PackdTestSupport
import Testing
@testable import API

/// Server-sent events whose ids come from the durable log and survive a restart.
@Suite struct EventRoutesTests {
    @Test func stateEventsHaveIncreasingIdsThatContinueAfterReopening() throws {
        let first = try RoutesFixture()
        defer { first.removeFiles() }
        let id = try #require(try first.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#).json["id"] as? Int)
        let stream = try StreamClient(port: first.port)
        try stream.get("/v1/packs/\(id)/events")
        #expect(stream.status == 200)
        #expect(stream.header("Content-Type") == "text/event-stream")
        let snapshot = try #require(try stream.nextEvent())
        #expect(snapshot.type == "progress")

        #expect(try first.send("POST", "/v1/packs/\(id)/resume").status == 200)
        #expect(try first.send("POST", "/v1/packs/\(id)/suspend").status == 200)
        let states = [try #require(try stream.nextEvent()), try #require(try stream.nextEvent())]
        #expect(states.map(\.type) == ["state", "state"])
        #expect(states[0].data.contains(#""state":"queued""#) && states[0].data.contains(#""previous_state":"inactive""#))
        #expect(states[1].data.contains(#""state":"inactive""#) && states[1].data.contains(#""previous_state":"queued""#))
        let firstIDs = states.compactMap(\.id)
        #expect(firstIDs.count == 2 && firstIDs[0] < firstIDs[1])
        first.stop()

        // The same database, a new process: ids continue, and a client resuming from before
        // the restart gets what it missed from the durable log.
        let reopened = try RoutesFixture(reopening: first.directory)
        defer { reopened.stop() }
        #expect(try reopened.send("POST", "/v1/packs/\(id)/resume").status == 200)
        let resumed = try StreamClient(port: reopened.port)
        try resumed.get("/v1/events", headers: ["Last-Event-ID": String(firstIDs[0])])
        #expect(resumed.status == 200)
        let replayed = try resumed.events { $0.id.map { $0 > firstIDs[1] } ?? false }
        #expect(replayed.compactMap(\.id) == [firstIDs[1], firstIDs[1] + 1])
        #expect(replayed.allSatisfy { $0.type == "state" })

        let removed = try StreamClient(port: reopened.port)
        try removed.get("/v1/events")
        let packStream = try StreamClient(port: reopened.port)
        try packStream.get("/v1/packs/\(id)/events")
        #expect(try packStream.nextEvent()?.type == "progress")
        #expect(try reopened.send("DELETE", "/v1/packs/\(id)").status == 204)
        let gone = try #require(try removed.nextEvent())
        #expect(gone.type == "pack_removed")
        #expect((gone.id ?? 0) > firstIDs[1] + 1)
        // The pack's own stream says so, then ends.
        #expect(try packStream.nextEvent() == gone)
        #expect(try packStream.nextEvent() == nil)
    }

    @Test func creatingAPackPublishesAStateEvent() throws {
        let server = try RoutesFixture()
        defer {
            server.stop()
            server.removeFiles()
        }
        let stream = try StreamClient(port: server.port)
        try stream.get("/v1/events")
        #expect(stream.status == 200)
        let created = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion())}"#)
        let id = try #require(created.json["id"] as? Int)
        let inactive = try #require(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#).json["id"] as? Int)
        let events = [try #require(try stream.nextEvent()), try #require(try stream.nextEvent())]
        #expect(events.map(\.type) == ["state", "state"])
        let first = try #require(try JSONSerialization.jsonObject(with: Data(events[0].data.utf8)) as? [String: Any])
        #expect(first["pack_id"] as? Int == id)
        #expect(first["state"] as? String == "queued")
        #expect(first["previous_state"] is NSNull)
        #expect(events[1].data.contains(#""pack_id":\#(inactive)"#) && events[1].data.contains(#""state":"inactive""#))
    }

    @Test func badLastEventIDAndUnknownPackAreRefused() throws {
        let server = try RoutesFixture()
        defer {
            server.stop()
            server.removeFiles()
        }
        #expect(try server.send("GET", "/v1/events", headers: ["Last-Event-ID": "x1"]).status == 400)
        #expect(try server.send("GET", "/v1/packs/77/events").status == 404)
    }
}
