import Foundation
import PackdTestSupport
import Testing

/// The life of a pack seen only through the HTTP API of a real `packd serve`: create, follow it
/// live, poll it with ETags, suspend, resume, delete, reconnect and restart. The upstream holds
/// tiles at a gate, so "mid-download" is a state the test stands in rather than a race it hopes
/// to win.
@Suite(.serialized) struct APILifecycleTests {
    @Test func createStreamPollAndComplete() throws {
        let (upstream, server) = try APIProof.start(holdingTilesAfter: 20, arguments: ["--event-heartbeat", "100ms"])
        defer { APIProof.end(upstream, server) }

        let all = try server.events("/v1/events")
        #expect(all.status == 200)
        #expect(all.header("Content-Type")?.hasPrefix("text/event-stream") == true)
        let started = Date()
        let packID = try APIProof.createPack(server, upstream, maxZoom: 7)
        try APIProof.waitForPack(server, packID) {
            APIProof.state($0) == "active" && APIProof.progress($0, "completed_tiles") >= 1 && upstream.heldTiles > 0
        }

        // Held mid-download: once what is not held is stored, the ETag stays and polls get 304.
        var etag = ""
        var since = Date()
        #expect(eventually(within: 60) {
            guard let tag = try? server.send("GET", "/v1/packs/\(packID)").header("ETag") else { return false }
            if tag != etag { (etag, since) = (tag, Date()) }
            return Date().timeIntervalSince(since) > 0.5
        })
        for _ in 0..<3 {
            let unchanged = try server.send("GET", "/v1/packs/\(packID)", headers: ["If-None-Match": etag])
            #expect(unchanged.status == 304)
            #expect(unchanged.header("ETag") == etag)
            #expect(unchanged.body.isEmpty)
        }

        upstream.releaseTiles()
        let events = try APIProof.readUntilState(all, "complete", packID: packID)
        let elapsed = Date().timeIntervalSince(started)
        all.recordStream(target: "/v1/events")

        let changed = try server.send("GET", "/v1/packs/\(packID)", headers: ["If-None-Match": etag])
        #expect(changed.status == 200)
        #expect(changed.header("ETag") != nil && changed.header("ETag") != etag)
        #expect(APIProof.state(changed.json) == "complete")
        let planned = try PackDownloadTests.planned(upstream, maxZoom: 7).count
        #expect(APIProof.progress(changed.json, "completed_resources") == planned)

        // Ids strictly increase; state events go queued/active → complete.
        let ids = events.compactMap(\.id)
        #expect(ids.count == events.count)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 }, "\(ids)")
        let states = events.filter { $0.type == "state" }.map { APIProof.data($0)["state"] as? String ?? "" }
        #expect(states.last == "complete")
        #expect(states.contains("active"), "\(states)")
        #expect(states.dropLast().allSatisfy { ["queued", "active"].contains($0) }, "\(states)")

        // Progress is coalesced to ≤ 10/s, and the last change reaches the client before `complete`.
        let progress = events.filter { $0.type == "progress" }
        #expect(!progress.isEmpty)
        #expect(Double(progress.count) <= 10 * elapsed + 2, "\(progress.count) progress events in \(elapsed) s")
        let lastProgress = try #require(progress.last.map(APIProof.data)?["progress"] as? [String: Any])
        #expect(lastProgress["completed_resources"] as? Int == planned)
        #expect(lastProgress["expected_resources"] as? Int == planned)
        // The stream stayed alive with heartbeats while the tiles were held (`:ok` is the first comment).
        #expect(all.comments >= 2)
    }

    @Test func suspendResumeAndDeleteMidDownload() throws {
        let (upstream, server) = try APIProof.start(holdingTilesAfter: 10)
        defer { APIProof.end(upstream, server) }

        let packID = try APIProof.createPack(server, upstream, maxZoom: 7)
        let stream = try server.events("/v1/packs/\(packID)/events")
        try APIProof.waitForPack(server, packID) { APIProof.state($0) == "active" && upstream.heldTiles > 0 }

        let suspended = try server.send("POST", "/v1/packs/\(packID)/suspend")
        #expect(suspended.status == 200)
        #expect(APIProof.state(suspended.json) == "inactive")
        var events = try APIProof.readUntilState(stream, "inactive", packID: packID)
        // While suspended nothing runs: the tiles let through now are not stored for the pack.
        upstream.releaseTiles()
        let frozen = try APIProof.waitForPack(server, packID) { _ in upstream.heldTiles == 0 }
        #expect(APIProof.state(frozen) == "inactive")

        let resumed = try server.send("POST", "/v1/packs/\(packID)/resume")
        #expect(resumed.status == 200)
        #expect(["queued", "active"].contains(APIProof.state(resumed.json)))
        events += try APIProof.readUntilState(stream, "complete", packID: packID)
        stream.recordStream(target: "/v1/packs/\(packID)/events")
        let states = events.filter { $0.type == "state" }.map { APIProof.data($0)["state"] as? String ?? "" }
        #expect(states.contains("inactive") && states.last == "complete", "\(states)")
        // A suspended pack's stream never claims it is still active.
        let suspendedAt = try #require(events.firstIndex { $0.type == "state" && APIProof.data($0)["state"] as? String == "inactive" })
        let resumedAt = try #require(events[suspendedAt...].firstIndex {
            $0.type == "state" && ["queued", "active"].contains(APIProof.data($0)["state"] as? String ?? "")
        })
        let staleProgress = events[suspendedAt..<resumedAt].filter { $0.type == "progress" && APIProof.data($0)["state"] as? String == "active" }
        #expect(staleProgress.isEmpty, "\(staleProgress)")
        let done = try server.send("GET", "/v1/packs/\(packID)")
        #expect(APIProof.progress(done.json, "completed_resources") == (try PackDownloadTests.planned(upstream, maxZoom: 7).count))

        // Delete mid-download: the pack's stream says pack_removed and ends; the pack is gone.
        upstream.holdTiles(after: 10)
        let second = try APIProof.createPack(server, upstream, maxZoom: 8, name: "to delete")
        let secondStream = try server.events("/v1/packs/\(second)/events")
        try APIProof.waitForPack(server, second) { APIProof.state($0) == "active" && upstream.heldTiles > 0 }
        let deleted = try server.send("DELETE", "/v1/packs/\(second)")
        #expect(deleted.status == 204)
        let removal = try secondStream.events { $0.type == "pack_removed" }
        #expect(APIProof.data(removal.last!)["pack_id"] as? Int == second)
        #expect(try secondStream.nextEvent() == nil)
        secondStream.recordStream(target: "/v1/packs/\(second)/events")
        upstream.releaseTiles()
        #expect(try server.send("GET", "/v1/packs/\(second)").status == 404)
        #expect(try server.send("GET", "/v1/packs/\(second)/events").status == 404)
        // The first pack's stored tiles were not taken with the deleted one.
        #expect(APIProof.state(try server.send("GET", "/v1/packs/\(packID)").json) == "complete")
        #expect(server.stop() == 0)
    }

    @Test func reconnectMissesNothingAndIdsSurviveRestart() throws {
        let (upstream, server) = try APIProof.start(holdingTilesAfter: 10)
        defer { APIProof.end(upstream, server) }

        let packID = try APIProof.createPack(server, upstream, maxZoom: 7)
        let target = "/v1/packs/\(packID)/events"
        let reference = try server.events(target)
        var first: StreamClient? = try server.events(target)
        try APIProof.waitForPack(server, packID) { APIProof.state($0) == "active" && upstream.heldTiles > 0 }
        // The snapshot, then at least one live event; then the client goes away.
        let seen = [try first?.nextEvent(), try first?.nextEvent()].compactMap { $0 }
        let lastSeen = try #require(seen.last?.id)
        first = nil
        upstream.releaseTiles()
        try APIProof.waitForPack(server, packID) { APIProof.state($0) == "complete" }

        let second = try server.events(target, headers: ["Last-Event-ID": "\(lastSeen)"])
        let resumed = try APIProof.readUntilState(second, "complete", packID: packID)
        second.recordStream(target: target)
        let everything = try APIProof.readUntilState(reference, "complete", packID: packID)
        #expect(resumed.map(\.id) == everything.filter { $0.id! > lastSeen }.map(\.id))
        #expect(resumed.map(\.data) == everything.filter { $0.id! > lastSeen }.map(\.data))
        let lastID = try #require(everything.last?.id)

        // A restart on the same database: the log replays across it, new ids continue above.
        #expect(server.stop() == 0)
        try server.start()
        let replay = try server.events(target, headers: ["Last-Event-ID": "\(lastID - 3)"])
        let replayed = try APIProof.readUntilState(replay, "complete", packID: packID)
        #expect(replayed.map(\.id) == everything.suffix(3).map(\.id))
        #expect(replayed.map(\.type) == everything.suffix(3).map(\.type))

        let all = try server.events("/v1/events")
        let again = try APIProof.createPack(server, upstream, maxZoom: 3, name: "after restart")
        let fresh = try APIProof.readUntilState(all, "complete", packID: again)
        all.recordStream(target: "/v1/events")
        #expect(!fresh.isEmpty)
        #expect(fresh.allSatisfy { ($0.id ?? 0) > lastID }, "\(fresh.map(\.id)) after \(lastID)")

        // An id this server never handed out (another database's): a snapshot, not silence.
        let stranger = try server.events(target, headers: ["Last-Event-ID": "\(lastID + 1_000_000)"])
        let snapshot = try #require(try stranger.nextEvent())
        #expect(snapshot.type == "progress")
        #expect(APIProof.data(snapshot)["state"] as? String == "complete")
        #expect(APIProof.data(snapshot)["pack_id"] as? Int == packID)
    }
}
