import Foundation
import PackdTestSupport
import Packs
import Testing
@testable import API

/// `/v1/packs…` through a real server and database.
@Suite struct PackRoutesTests {
    func withServer(withKeys: Bool = false, _ body: (RoutesFixture) throws -> Void) throws {
        let fixture = try RoutesFixture(withKeys: withKeys)
        defer {
            fixture.stop()
            fixture.removeFiles()
        }
        try body(fixture)
    }

    @Test func createsAndReadsBackATemplatePack() throws {
        try withServer { server in
            let created = try server.send("POST", "/v1/packs", json: """
                {"region": \(RoutesFixture.templateRegion()), "name": "World z0-1", "context": "eyJ0cmlwIjoxfQ==", "start": false,
                 "limits": {"max_tiles": 100}}
                """)
            #expect(created.status == 201)
            let pack = created.json
            let id = try #require(pack["id"] as? Int)
            #expect(created.header("Location") == "/v1/packs/\(id)")
            #expect(pack["state"] as? String == "inactive")
            #expect(pack["name"] as? String == "World z0-1")
            #expect(pack["context"] as? String == "eyJ0cmlwIjoxfQ==")
            // 1 + 4 tiles, known at creation for a template region.
            #expect((pack["progress"] as? [String: Any])?["expected_resources"] as? Int == 5)
            #expect((pack["limits"] as? [String: Any])?["max_tiles"] as? Int == 100)
            #expect(((pack["region"] as? [String: Any])?["tiles"] as? [String])?.first == "https://tiles.example.org/{z}/{x}/{y}.png")

            let read = try server.send("GET", "/v1/packs/\(id)")
            #expect(read.status == 200)
            #expect(read.json["name"] as? String == "World z0-1")
            #expect(read.header("ETag") == created.header("ETag"))
            #expect(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion())}"#).json["state"] as? String == "queued")
        }
    }

    @Test func badBodiesGetPreciseProblems() throws {
        try withServer { server in
            let malformed = try server.send("POST", "/v1/packs", json: #"{"region": "#)
            #expect(malformed.status == 400)
            #expect(malformed.json["type"] as? String == "urn:packd:problem:malformed-request")

            let badRegion = try server.send("POST", "/v1/packs", json: #"{"region": {"tiles": ["https://t.example.org/{z}/{x}/{y}.png"], "bounds": [0, 0, 1, 1], "min_zoom": 5, "max_zoom": 2}}"#)
            #expect(badRegion.status == 422)
            let pointers = (badRegion.json["errors"] as? [[String: Any]] ?? []).compactMap { $0["pointer"] as? String }
            #expect(pointers.contains { $0.hasPrefix("/region/") }, "\(badRegion.body)")

            let unknown = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "colour": "red"}"#)
            #expect(unknown.status == 422)
            #expect((unknown.json["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "/colour")

            let missing = try server.send("POST", "/v1/packs", json: #"{"name": "x"}"#)
            #expect(missing.status == 422)
            #expect((missing.json["errors"] as? [[String: Any]])?.contains { $0["pointer"] as? String == "/region" } == true)

            let hugeContext = String(repeating: "A", count: 87_400)
            let context = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "context": "\#(hugeContext)"}"#)
            #expect(context.status == 422)
            #expect((context.json["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "/context")
            let notBase64 = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "context": "%%%"}"#)
            #expect(notBase64.status == 422)

            let wrongType = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion())}"#, headers: ["Content-Type": "text/plain"])
            #expect(wrongType.status == 415)
            #expect(wrongType.json["type"] as? String == "urn:packd:problem:unsupported-media-type")

            let tooBig = try server.send("POST", "/v1/packs", json: "{\"name\": \"" + String(repeating: "x", count: 1_100_000) + "\"}")
            #expect(tooBig.status == 413)

            let unknownPack = try server.send("GET", "/v1/packs/999")
            #expect(unknownPack.status == 404)
            #expect(unknownPack.json["type"] as? String == "urn:packd:problem:not-found")
            // A segment that is no pack id is answered as an unknown id, saying why.
            for segment in ["abc", "0", "-1", "9007199254740992", "12345678901234567"] {
                let notAnID = try server.send("GET", "/v1/packs/\(segment)")
                #expect(notAnID.status == 404 && notAnID.json["type"] as? String == "urn:packd:problem:not-found")
                #expect((notAnID.json["detail"] as? String)?.contains("'\(segment)' is not a pack id") == true, "\(notAnID.body)")
            }
            #expect((try server.send("POST", "/v1/packs/abc/suspend").json["detail"] as? String)?.contains("is not a pack id") == true)
            #expect(try server.send("GET", "/v1/packs?limit=501").status == 400)
            #expect(try server.send("GET", "/v1/packs?state=sleeping").status == 400)
        }
    }

    /// `start_area` and `region.glyphs`: stored and shown as posted, and every problem named at
    /// its pointer.
    @Test func leanPackOptionsAreValidatedAndShown() throws {
        try withServer { server in
            let style = #"{"style_url": "https://maps.example.org/style.json", "bounds": [5, 44, 15, 50], "max_zoom": 8"#
            let created = try server.send("POST", "/v1/packs", json: """
                {"region": \(style), "glyphs": "region"}, "start": false, "start_area": {"center": [8.54, 47.37]}}
                """)
            #expect(created.status == 201, "\(created.body)")
            #expect((created.json["region"] as? [String: Any])?["glyphs"] as? String == "region")
            let area = try #require(created.json["start_area"] as? [String: Any])
            #expect(area["center"] as? [Double] == [8.54, 47.37] && area["radius_m"] as? Double == 5_000, "the default radius")
            #expect(created.json["start_area_ready_at"] is NSNull)
            let plain = try server.send("POST", "/v1/packs", json: #"{"region": \#(style)}, "start": false}"#)
            #expect((plain.json["region"] as? [String: Any])?["glyphs"] as? String == "all")
            #expect(plain.json["start_area"] is NSNull && plain.json["skipped_glyph_ranges"] is NSNull)

            func pointers(_ body: String) throws -> [String] {
                let reply = try server.send("POST", "/v1/packs", json: body)
                #expect(reply.status == 422, "\(reply.body)")
                return (reply.json["errors"] as? [[String: Any]] ?? []).compactMap { $0["pointer"] as? String }
            }
            #expect(try pointers(#"{"region": \#(style), "glyphs": "some"}}"#) == ["/region/glyphs"])
            #expect(try pointers(#"{"region": \#(RoutesFixture.templateRegion().dropLast()), "glyphs": "region"}}"#)
                    == ["/region/glyphs"])
            #expect(try pointers(#"{"region": \#(style)}, "start_area": {"center": [200, 95], "radius_m": 0}}"#)
                    == ["/start_area/center/0", "/start_area/center/1", "/start_area/radius_m"])
            #expect(try pointers(#"{"region": \#(style)}, "start_area": {"center": [1]}}"#) == ["/start_area/center"])
            #expect(try pointers(#"{"region": \#(style)}, "start_area": {"center": [1, 2], "radius_m": null}}"#)
                    == ["/start_area/radius_m"], "a number, left out for the default, never null")
            #expect(try pointers(#"{"region": \#(style)}, "start_area": {"center": [1, 2], "radius": 5}}"#)
                    == ["/start_area/radius"])
            #expect(try pointers(#"{"region": \#(style)}, "start_area": {"radius_m": 5}}"#).first?.hasPrefix("/start_area") == true)
        }
    }

    @Test func tileLimitIsCheckedForTemplateRegions() throws {
        try withServer { server in
            let over = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion(maxZoom: 3)), "limits": {"max_tiles": 20}}"#)
            #expect(over.status == 422)
            #expect(over.json["type"] as? String == "urn:packd:problem:tile-limit-exceeded")
            #expect(over.json["tile_count"] as? Int == 1 + 4 + 16 + 64)
            #expect(over.json["tile_limit"] as? Int == 20)

            #expect(try server.send("PUT", "/v1/storage/tile-limit", json: #"{"maximum": 4}"#).status == 200)
            let global = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion(maxZoom: 1))}"#)
            #expect(global.status == 422)
            #expect(global.json["tile_limit"] as? Int == 4)
            #expect(try server.send("GET", "/v1/storage").json["packs"] as? Int == 0)
        }
    }

    @Test func idempotencyKeyReplaysTheFirstAnswer() throws {
        try withServer { server in
            let body = #"{"region": \#(RoutesFixture.templateRegion()), "name": "once"}"#
            let first = try server.send("POST", "/v1/packs", json: body, headers: ["Idempotency-Key": "k-1"])
            #expect(first.status == 201)
            #expect(first.header("Idempotent-Replayed") == nil)
            let again = try server.send("POST", "/v1/packs", json: body, headers: ["Idempotency-Key": "k-1"])
            #expect(again.status == 201)
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(again.json["id"] as? Int == first.json["id"] as? Int)
            #expect(again.header("Location") == first.header("Location"))
            #expect(again.header("ETag") == first.header("ETag"))

            let different = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "name": "twice"}"#,
                                             headers: ["Idempotency-Key": "k-1"])
            #expect(different.status == 422)
            #expect(different.json["type"] as? String == "urn:packd:problem:idempotency-key-reused")
            #expect((try server.send("GET", "/v1/packs").json["packs"] as? [Any])?.count == 1)
        }
    }

    /// Two creations with one key pipelined in one write: the server parses both in the same
    /// read, so the second runs while the first is still in the store and must get 409.
    @Test func idempotencyKeyInFlightIsAConflict() throws {
        try withServer { server in
            let body = #"{"region": \#(RoutesFixture.templateRegion())}"#
            func request(_ last: Bool) -> String {
                "POST /v1/packs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nIdempotency-Key: same\r\n"
                    + (last ? "Connection: close\r\n" : "") + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
            }
            let client = try StreamClient(port: server.port)
            try client.send(request(false) + request(true))
            try client.readHead()
            #expect(client.status == 201)
            let rest = try client.readRemainder()
            #expect(rest.contains("HTTP/1.1 409 "), "\(rest)")
            #expect(rest.contains("urn:packd:problem:idempotency-key-in-use"))
            #expect((try server.send("GET", "/v1/packs").json["packs"] as? [Any])?.count == 1)
        }
    }

    @Test func etagPollingAnswers304UntilThePackChanges() throws {
        try withServer { server in
            let created = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#)
            let id = try #require(created.json["id"] as? Int)
            let etag = try #require(created.header("ETag"))
            let unchanged = try server.send("GET", "/v1/packs/\(id)", headers: ["If-None-Match": etag])
            #expect(unchanged.status == 304)
            #expect(unchanged.header("ETag") == etag)
            #expect(unchanged.body.isEmpty)

            let resumed = try server.send("POST", "/v1/packs/\(id)/resume")
            #expect(resumed.status == 200)
            #expect(resumed.json["state"] as? String == "queued")
            let changed = try server.send("GET", "/v1/packs/\(id)", headers: ["If-None-Match": etag])
            #expect(changed.status == 200)
            #expect(changed.header("ETag") != etag)
            #expect(changed.json["state"] as? String == "queued")
        }
    }

    @Test func pagesFollowNextInCreationOrder() throws {
        try withServer { server in
            for index in 0..<7 {
                #expect(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "name": "pack \#(index % 2 == 0 ? "even" : "odd") \#(index)", "start": false}"#).status == 201)
            }
            var target: String? = "/v1/packs?limit=3"
            var names: [String] = []
            var pages = 0
            while let next = target {
                let page = try server.send("GET", next)
                #expect(page.status == 200)
                names += (page.json["packs"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
                target = page.json["next"] as? String
                pages += 1
            }
            #expect(pages == 3)
            #expect(names == (0..<7).map { "pack \($0 % 2 == 0 ? "even" : "odd") \($0)" })

            let filtered = try server.send("GET", "/v1/packs?q=ODD&limit=2")
            #expect((filtered.json["packs"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["pack odd 1", "pack odd 3"])
            let rest = try server.send("GET", try #require(filtered.json["next"] as? String))
            #expect((rest.json["packs"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["pack odd 5"])
            #expect(rest.json["next"] is NSNull)
            #expect((try server.send("GET", "/v1/packs?state=queued").json["packs"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func updateSuspendAndDelete() throws {
        try withServer { server in
            let id = try #require(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "name": "a"}"#).json["id"] as? Int)
            let renamed = try server.send("PATCH", "/v1/packs/\(id)", json: #"{"name": "b", "context": "AAEC"}"#)
            #expect(renamed.status == 200)
            #expect(renamed.json["name"] as? String == "b")
            #expect(renamed.json["context"] as? String == "AAEC")
            let cleared = try server.send("PATCH", "/v1/packs/\(id)", json: #"{"context": null}"#)
            #expect(cleared.json["context"] is NSNull)
            #expect(cleared.json["name"] as? String == "b")
            #expect(try server.send("PATCH", "/v1/packs/\(id)", json: #"{"state": "complete"}"#).status == 422)
            #expect(try server.send("PATCH", "/v1/packs/\(id)", json: "{}").status == 422)
            #expect(try server.send("PATCH", "/v1/packs/4242", json: #"{"name": "x"}"#).status == 404)

            #expect(try server.send("POST", "/v1/packs/\(id)/suspend").json["state"] as? String == "inactive")
            // Suspending again changes nothing.
            #expect(try server.send("POST", "/v1/packs/\(id)/suspend").json["state"] as? String == "inactive")
            #expect(try server.send("POST", "/v1/packs/4242/resume").status == 404)

            let errors = try server.send("GET", "/v1/packs/\(id)/errors")
            #expect(errors.status == 200)
            #expect(errors.json["total"] as? Int == 0)
            #expect(try server.send("GET", "/v1/packs/\(id)/errors?limit=0").status == 400)

            #expect(try server.send("DELETE", "/v1/packs/\(id)").status == 204)
            #expect(try server.send("GET", "/v1/packs/\(id)").status == 404)
            #expect(try server.send("DELETE", "/v1/packs/\(id)").status == 404)
        }
    }

    /// `resume` on a failed pack clears its failures and queues it (clearing and the state change
    /// are one transaction: the failures are never gone while the pack still reads `failed`).
    @Test func resumeOfAFailedPackClearsItsFailuresAndQueuesIt() throws {
        try withServer { server in
            let id = try #require(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#).json["id"] as? Int)
            let packID = Int64(id)
            let done = DispatchSemaphore(value: 0)
            server.writer.perform({ database in
                try database.recordFailure(packID: packID, url: "https://tiles.example.org/1/0/0.png", status: 500,
                                           message: "HTTP 500", attempts: 5, now: 1)
                try database.setPackState(packID, state: .failed, error: PackError(.resourcesFailed, "1 failed"), now: 1)
            }, completion: { _ in done.signal() })
            done.wait()
            #expect(try server.send("GET", "/v1/packs/\(id)/errors").json["total"] as? Int == 1)

            let resumed = try server.send("POST", "/v1/packs/\(id)/resume")
            #expect(resumed.status == 200)
            #expect(resumed.json["state"] as? String == "queued")
            #expect(resumed.json["error"] is NSNull)
            #expect((resumed.json["progress"] as? [String: Any])?["failed_resources"] as? Int == 0)
            #expect(try server.send("GET", "/v1/packs/\(id)/errors").json["total"] as? Int == 0)
        }
    }

    @Test func rolesAreEnforced() throws {
        try withServer(withKeys: true) { server in
            let body = #"{"region": \#(RoutesFixture.templateRegion())}"#
            let anonymous = try server.send("POST", "/v1/packs", json: body)
            #expect(anonymous.status == 401)
            #expect(anonymous.json["type"] as? String == "urn:packd:problem:unauthorized")
            let reader = try server.send("POST", "/v1/packs", json: body, headers: ["Authorization": "Bearer \(RoutesFixture.readKey)"])
            #expect(reader.status == 403)
            #expect(reader.json["type"] as? String == "urn:packd:problem:forbidden")
            #expect(try server.send("POST", "/v1/packs", json: body, headers: ["Authorization": "Bearer \(RoutesFixture.writeKey)"]).status == 201)
            #expect(try server.send("GET", "/v1/packs", headers: ["Authorization": "Bearer \(RoutesFixture.readKey)"]).status == 200)
            #expect(try server.send("POST", "/v1/storage/reset", json: #"{"confirm": "reset"}"#,
                                    headers: ["Authorization": "Bearer \(RoutesFixture.writeKey)"]).status == 403)
            let metrics = try server.send("GET", "/metrics", headers: ["Authorization": "Bearer \(RoutesFixture.readKey)"]).body
            #expect(metrics.contains(#"packd_packs{state="queued"} 1"#), "\(metrics.split(separator: "\n").filter { $0.contains("packd_packs") })")
            #expect(metrics.contains(#"route="/v1/packs",method="POST",status="403""#))
            // Read-through needs write; a plain read does not.
            let resource = "/v1/resources?url=https%3A%2F%2Fexample.org%2Fa.png"
            #expect(try server.send("GET", resource + "&fetch=true", headers: ["Authorization": "Bearer \(RoutesFixture.readKey)"]).status == 403)
            #expect(try server.send("GET", resource, headers: ["Authorization": "Bearer \(RoutesFixture.readKey)"]).status == 404)
            // This fixture has no upstream access plugged in.
            let engineless = try server.send("GET", resource + "&fetch=true", headers: ["Authorization": "Bearer \(RoutesFixture.writeKey)"])
            #expect(engineless.status == 503)
            #expect(engineless.json["detail"] as? String ?? "" != "")
            #expect(try server.send("GET", "/v1/packs/999/events?access_token=\(RoutesFixture.readKey)", headers: [:]).status == 404)
        }
    }
}
