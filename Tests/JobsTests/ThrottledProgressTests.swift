import Foundation
import PackdTestSupport
import Testing

/// A pack's progress says what its upstream does to it — `transfers_in_flight`, and `throttled`
/// while a host pauses it with `Retry-After` — in `GET /v1/packs/{id}` and in its `progress`
/// events, and the throttle clears when the pause is over. On a real `packd serve`.
@Suite struct ThrottledProgressTests {
    static func throttled(_ progress: [String: Any]) -> [String: Any]? {
        progress["throttled"] as? [String: Any]
    }

    static func progress(_ document: [String: Any]) -> [String: Any] {
        document["progress"] as? [String: Any] ?? [:]
    }

    @Test func aRetryAfterPauseShowsInThePackAndItsEventsThenClears() throws {
        // The first tile is answered 429 with `Retry-After` 3 s ahead (an HTTP-date: 2 to 3 s).
        let upstream = try MapUpstream(faults: .init(tileDelay: .milliseconds(20), firstTileRetryAfterDate: .seconds(3)))
        defer { upstream.stop() }
        // Four transfers, not adaptive: the download outlasts the pause, and no limiter cut
        // follows it (a cut would show as `rate_limited` for a while, tested with the refusing
        // upstream in AdaptiveDownloadTests).
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-throttle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rules = directory.appendingPathComponent("rules.json")
        try Data(#"{"rules": [{"prefix": "\#(upstream.base)/", "max_transfers": 4, "adaptive": false}]}"#.utf8).write(to: rules)
        let server = try PackdServer(arguments: ["--upstream-rules-file", rules.path])
        defer { server.remove() }
        let stream = try server.events("/v1/events")
        let packID = try APIProof.createPack(server, upstream, maxZoom: 8)
        let host = "127.0.0.1:\(upstream.port)"

        // The pause reaches the events without a commit to carry it.
        var paused: [String: Any] = [:]
        _ = try stream.events { event in
            let data = APIProof.data(event)
            guard event.type == "progress", data["pack_id"] as? Int == packID,
                  let throttled = Self.throttled(Self.progress(data)) else { return false }
            paused = throttled
            return true
        }
        #expect(paused["reason"] as? String == "retry_after")
        #expect(paused["host"] as? String == host)
        let until = try #require(paused["until"] as? String)
        let untilDate = try #require(ISO8601DateFormatter().date(from: until), "\(until)")
        #expect(untilDate > Date().addingTimeInterval(-1) && untilDate < Date().addingTimeInterval(5), "\(until)")

        // A poll says the same while it lasts, with nothing on the wire.
        let during = try APIProof.waitForPack(server, packID, within: 10) { pack in
            Self.throttled(Self.progress(pack))?["reason"] as? String == "retry_after"
                && APIProof.progress(pack, "transfers_in_flight") == 0
        }
        #expect(APIProof.state(during) == "active")
        #expect(Self.throttled(Self.progress(during))?["until"] as? String == until)

        // Then the pack downloads again: an event and a poll show transfers and no throttle.
        let resumed = try stream.events { event in
            let data = APIProof.data(event)
            let progress = Self.progress(data)
            return event.type == "progress" && data["pack_id"] as? Int == packID && data["state"] as? String == "active"
                && progress["throttled"] is NSNull && (progress["transfers_in_flight"] as? Int ?? 0) > 0
        }
        #expect(!resumed.isEmpty)
        let after = try APIProof.waitForPack(server, packID) { pack in
            APIProof.state(pack) == "complete"
                || (Self.progress(pack)["throttled"] is NSNull && APIProof.progress(pack, "transfers_in_flight") > 0)
        }
        #expect(Self.progress(after)["throttled"] is NSNull, "\(after)")

        // A pack that is not downloading has nothing in flight and nothing holding it back.
        let done = try APIProof.waitForPack(server, packID) { APIProof.state($0) == "complete" }
        #expect(APIProof.progress(done, "transfers_in_flight") == 0)
        #expect(Self.progress(done)["throttled"] is NSNull)
        #expect(upstream.requests.contains { $0.target.hasPrefix("/tiles/") })
    }
}
