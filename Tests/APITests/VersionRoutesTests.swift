import Foundation
import PackdTestSupport
import Packs
import Store
import Testing
@testable import API

/// `GET /v1/packs/{id}/versions`, the pack document's `version`, `refresh` and
/// `next_refresh_at`, and the `version_created` event, through a real server and database.
@Suite struct VersionRoutesTests {
    func withServer(_ body: (RoutesFixture) throws -> Void) throws {
        let fixture = try RoutesFixture()
        defer {
            fixture.stop()
            fixture.removeFiles()
        }
        try body(fixture)
    }

    func create(_ server: RoutesFixture, refresh: String? = nil) throws -> (id: Int64, json: [String: Any]) {
        let extra = refresh.map { #", "refresh": \#($0)"# } ?? ""
        let created = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false\#(extra)}"#)
        #expect(created.status == 201, "\(created.body)")
        return (Int64(try #require(created.json["id"] as? Int)), created.json)
    }

    @Test func aScheduledRefreshIsSetOnCreateChangedAndClearedByPatch() throws {
        try withServer { server in
            let before = Int64(Date().timeIntervalSince1970)
            let (id, pack) = try create(server, refresh: #"{"every": "P7D"}"#)
            #expect(pack["version"] as? Int == 0)
            #expect((pack["refresh"] as? [String: String]) == ["every": "P7D"])
            let due = try #require((pack["next_refresh_at"] as? String).flatMap { Timestamp(rfc3339: $0) })
            #expect(due.seconds >= before + 604_800 && due.seconds <= Int64(Date().timeIntervalSince1970) + 604_800 + 86_400)

            let patched = try server.send("PATCH", "/v1/packs/\(id)", json: #"{"refresh": {"every": "PT12H"}}"#)
            #expect(patched.status == 200 && (patched.json["refresh"] as? [String: String]) == ["every": "PT12H"])
            let next = try #require((patched.json["next_refresh_at"] as? String).flatMap { Timestamp(rfc3339: $0) })
            #expect(next.seconds < due.seconds && next.seconds >= before + 43_200)
            let cleared = try server.send("PATCH", "/v1/packs/\(id)", json: #"{"refresh": null}"#)
            #expect(cleared.status == 200 && cleared.json["refresh"] is NSNull && cleared.json["next_refresh_at"] is NSNull)
            #expect(cleared.json["name"] is NSNull, "a PATCH of refresh leaves the rest")
        }
    }

    @Test func aBadScheduleIsRefusedAtItsField() throws {
        try withServer { server in
            for (body, pointer) in [(#"{"every": "PT30M"}"#, "/refresh/every"), (#"{"every": "weekly"}"#, "/refresh/every"),
                                    (#"{"every": "P1.5D"}"#, "/refresh/every")] {
                let refused = try server.send("POST", "/v1/packs",
                                              json: #"{"region": \#(RoutesFixture.templateRegion()), "refresh": \#(body)}"#)
                #expect(refused.status == 422, "\(body)")
                let errors = refused.json["errors"] as? [[String: Any]]
                #expect(errors?.contains { $0["pointer"] as? String == pointer } == true, "\(refused.body)")
            }
            let (id, _) = try create(server)
            for (body, pointer) in [(#"{"refresh": {"every": "PT5M"}}"#, "/refresh/every"), (#"{"refresh": {}}"#, "/refresh/every"),
                                    (#"{"refresh": {"every": "P1D", "at": "noon"}}"#, "/refresh/at"), (#"{"refresh": 7}"#, "/refresh")] {
                let refused = try server.send("PATCH", "/v1/packs/\(id)", json: body)
                #expect(refused.status == 422, "\(body)")
                let errors = refused.json["errors"] as? [[String: Any]]
                #expect(errors?.contains { $0["pointer"] as? String == pointer } == true, "\(refused.body)")
            }
        }
    }

    @Test func versionsAreListedAndAnnouncedAsTheyAreCut() throws {
        try withServer { server in
            #expect(try server.send("GET", "/v1/packs/987654/versions").status == 404)
            let (id, _) = try create(server)
            let none = try server.send("GET", "/v1/packs/\(id)/versions")
            #expect(none.status == 200 && none.json["version"] as? Int == 0 && (none.json["versions"] as? [Any])?.isEmpty == true)
            #expect(try server.send("GET", "/v1/packs/\(id)/versions?limit=3").status == 400)

            // The pack completes on the writer, as a download ends; the API publishes what it cut.
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var outcome: TransitionOutcome?
            server.writer.perform({ database -> TransitionOutcome in
                _ = try database.transition(id, .resume, now: 1_800_000_000)
                _ = try database.transition(id, .start, now: 1_800_000_000)
                return try database.transition(id, .finished(failedResources: 0), now: 1_800_000_000)
            }) { result in
                outcome = try? result.get()
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 30) == .success)
            guard case .applied(let completed)? = outcome else { Issue.record("the pack did not complete"); return }
            #expect(completed.createdVersions.map(\.version) == [1])
            nonisolated(unsafe) let api = server.api!
            server.server.onLoop { api.events.publish(completed, packID: id) }

            let listed = try server.send("GET", "/v1/packs/\(id)/versions")
            #expect(listed.json["pack_id"] as? Int == Int(id) && listed.json["version"] as? Int == 1)
            let versions = try #require(listed.json["versions"] as? [[String: Any]])
            #expect(versions.count == 1 && versions[0]["version"] as? Int == 1)
            #expect(versions[0]["created_at"] as? String == "2027-01-15T08:00:00Z")
            #expect(Set(versions[0].keys) == ["version", "created_at", "resources", "tiles", "bytes", "changed_resources",
                                               "changed_bytes", "removed_resources"])
            #expect(try server.send("GET", "/v1/packs/\(id)").json["version"] as? Int == 1)
            #expect(eventually {
                let events = (try? server.store.readNow { try $0.events(after: 0, packID: id, limit: 100) }) ?? []
                return events.contains { $0.type == "version_created" && $0.json.contains("\"version\":1") }
            }, "version_created is published and logged")
        }
    }
}
