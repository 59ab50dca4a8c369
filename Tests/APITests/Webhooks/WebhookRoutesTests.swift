import Foundation
import Testing

/// `/v1/webhooks…` through the real API on a real store (no dispatcher runs here, so deliveries
/// stay pending and every answer is deterministic): the secret shown once, validation with
/// pointers, the address policy at creation, rotation, pings, delivery pages, retry, roles.
@Suite struct WebhookRoutesTests {
    static let admin = ["Authorization": "Bearer \(RoutesFixture.adminKey)"]

    private func created(_ fixture: RoutesFixture, _ json: String) throws -> [String: Any] {
        let reply = try fixture.send("POST", "/v1/webhooks", json: json, headers: Self.admin)
        #expect(reply.status == 201, "\(reply.body)")
        return reply.json
    }

    @Test func anEndpointShowsItsSecretOnceAndNeverAgain() throws {
        let fixture = try RoutesFixture(withKeys: true)
        defer { fixture.stop(); fixture.removeFiles() }
        let reply = try fixture.send("POST", "/v1/webhooks", json: """
            {"url": "https://hooks.example.com/packd?token=abc", "events": ["pack.completed", "pack.failed"], "pack_ids": [7, 8],
             "description": "provisioning"}
            """, headers: Self.admin)
        #expect(reply.status == 201)
        let body = reply.json
        let id = try #require(body["id"] as? Int)
        #expect(reply.header("Location") == "/v1/webhooks/\(id)")
        let secret = try #require(body["secret"] as? String)
        #expect(secret.hasPrefix("whsec_") && (Data(base64Encoded: String(secret.dropFirst(6)))?.count ?? 0) >= 24)
        #expect(body["events"] as? [String] == ["pack.completed", "pack.failed"] && body["pack_ids"] as? [Int] == [7, 8])
        #expect(body["enabled"] as? Bool == true && body["description"] as? String == "provisioning")

        let shown = try fixture.send("GET", "/v1/webhooks/\(id)", headers: Self.admin)
        #expect(shown.status == 200 && shown.json["secret"] == nil && !shown.body.contains(secret))
        let listed = try fixture.send("GET", "/v1/webhooks", headers: Self.admin)
        #expect(listed.status == 200 && !listed.body.contains(secret) && (listed.json["webhooks"] as? [Any])?.count == 1)

        let rotated = try fixture.send("POST", "/v1/webhooks/\(id)/secret", headers: Self.admin)
        let newSecret = try #require(rotated.json["secret"] as? String)
        #expect(rotated.status == 200 && newSecret != secret && newSecret.hasPrefix("whsec_"))
        #expect(rotated.json["previous_secret_expires_at"] is String, "the old secret signs beside the new one for a while")
        let afterRotation = try fixture.send("GET", "/v1/webhooks/\(id)", headers: Self.admin)
        #expect(!afterRotation.body.contains(newSecret) && !afterRotation.body.contains(secret))
        let metrics = try fixture.send("GET", "/metrics", headers: Self.admin)
        #expect(!metrics.body.contains(secret) && !metrics.body.contains(newSecret))
    }

    @Test func onlyTheAdminRoleManagesWebhooks() throws {
        let fixture = try RoutesFixture(withKeys: true)
        defer { fixture.stop(); fixture.removeFiles() }
        let write = ["Authorization": "Bearer \(RoutesFixture.writeKey)"]
        #expect(try fixture.send("GET", "/v1/webhooks", headers: write).status == 403)
        #expect(try fixture.send("POST", "/v1/webhooks", json: #"{"url":"https://a.example/","events":["*"]}"#, headers: write).status == 403)
        #expect(try fixture.send("GET", "/v1/webhooks").status == 401)
    }

    @Test func invalidBodiesAreRefusedWithAPointerPerProblem() throws {
        let fixture = try RoutesFixture(withKeys: true)
        defer { fixture.stop(); fixture.removeFiles() }
        func problems(_ json: String) throws -> [String: String] {
            let reply = try fixture.send("POST", "/v1/webhooks", json: json, headers: Self.admin)
            #expect(reply.status == 422, "\(json)")
            var found: [String: String] = [:]
            for error in reply.json["errors"] as? [[String: Any]] ?? [] {
                found[error["pointer"] as? String ?? "?"] = error["detail"] as? String
            }
            return found
        }
        #expect(try problems("{}").keys.sorted() == ["/events", "/url"])
        #expect(try problems(#"{"url": "ftp://a.example/", "events": ["pack.completed"]}"#).keys.sorted() == ["/url"])
        #expect(try problems(#"{"url": "https://user:pw@a.example/", "events": ["*"]}"#)["/url"]?.contains("credentials") == true)
        // What libcurl would refuse at every attempt though URLComponents takes it: a sub-delimiter
        // in a host name, a percent-encoded host no IDN conversion takes.
        #expect(try problems(#"{"url": "https://a!b.example/hook", "events": ["*"]}"#)["/url"]?.contains("libcurl") == true)
        #expect(try problems(#"{"url": "https://a%C3%A5.example/hook", "events": ["*"]}"#)["/url"]?.contains("libcurl") == true)
        #expect(try problems(#"{"url": "https://a.example/", "events": []}"#).keys.sorted() == ["/events"])
        #expect(try problems(#"{"url": "https://a.example/", "events": ["pack.done", "pack.failed", "pack.failed"]}"#).keys.sorted()
            == ["/events/0", "/events/2"])
        #expect(try problems(#"{"url": "https://a.example/", "events": ["*", "pack.failed"]}"#).keys.sorted() == ["/events"])
        #expect(try problems(#"{"url": "https://a.example/", "events": ["webhook.ping"]}"#).keys.sorted() == ["/events/0"])
        #expect(try problems(#"{"url": "https://a.example/", "events": ["*"], "pack_ids": [1, -2, "3", true]}"#).keys.sorted()
            == ["/pack_ids/1", "/pack_ids/2", "/pack_ids/3"])
        #expect(try problems(#"{"url": "https://a.example/", "events": ["*"], "secret": "mine", "enabled": false}"#).keys.sorted()
            == ["/enabled", "/secret"])
        #expect(try problems(#"{"url": "https://a.example/", "events": null, "description": null}"#).keys.sorted()
            == ["/description", "/events"], "null is no string and no list (only pack_ids may be null)")
        let long = String(repeating: "d", count: 501)
        #expect(try problems(#"{"url": "https://a.example/", "events": ["*"], "description": "\#(long)"}"#).keys.sorted() == ["/description"])
        #expect(try fixture.send("POST", "/v1/webhooks", json: "[", headers: Self.admin).status == 400)
        #expect(try fixture.send("POST", "/v1/webhooks", body: Array("{}".utf8), headers: Self.admin.merging(["Content-Type": "text/plain"]) { $1 }).status == 415)
    }

    @Test func loopbackPrivateAndLinkLocalURLsAreRefusedAtCreation() throws {
        let fixture = try RoutesFixture(withKeys: true)
        defer { fixture.stop(); fixture.removeFiles() }
        for url in ["http://127.0.0.1/hook", "http://[::1]/hook", "http://169.254.169.254/latest/meta-data", "http://localhost:8080/",
                    "http://10.1.2.3/", "http://2130706433/", "https://[::ffff:127.0.0.1]/", "http://0/"] {
            let reply = try fixture.send("POST", "/v1/webhooks", json: #"{"url": "\#(url)", "events": ["*"]}"#, headers: Self.admin)
            #expect(reply.status == 422, "\(url)")
            #expect(reply.json["type"] as? String == "urn:packd:problem:host-not-allowed", "\(url)")
            #expect((reply.json["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "/url")
        }
        #expect((try fixture.send("GET", "/v1/webhooks", headers: Self.admin).json["webhooks"] as? [Any])?.isEmpty == true)
        let patched = try created(fixture, #"{"url": "https://a.example/", "events": ["*"]}"#)
        let reply = try fixture.send("PATCH", "/v1/webhooks/\(patched["id"] as? Int ?? 0)", json: #"{"url": "http://127.0.0.1/"}"#,
                                     headers: Self.admin)
        #expect(reply.status == 422, "a change is checked like a creation")
    }

    @Test func patchChangesWhatItNamesAndDisablingStopsPings() throws {
        let fixture = try RoutesFixture(withKeys: true)
        defer { fixture.stop(); fixture.removeFiles() }
        let id = try #require(try created(fixture, #"{"url": "https://a.example/", "events": ["*"], "pack_ids": [3]}"#)["id"] as? Int)
        let changed = try fixture.send("PATCH", "/v1/webhooks/\(id)", json: #"{"events": ["pack.removed"], "pack_ids": null, "enabled": false}"#,
                                       headers: Self.admin)
        #expect(changed.status == 200)
        #expect(changed.json["events"] as? [String] == ["pack.removed"] && changed.json["pack_ids"] is NSNull)
        #expect(changed.json["enabled"] as? Bool == false && changed.json["disabled_reason"] as? String == "manual")
        #expect(changed.json["url"] as? String == "https://a.example/", "what the body does not name stays")
        #expect(try fixture.send("POST", "/v1/webhooks/\(id)/ping", headers: Self.admin).status == 409)
        let enabled = try fixture.send("PATCH", "/v1/webhooks/\(id)", json: #"{"enabled": true}"#, headers: Self.admin)
        #expect(enabled.json["enabled"] as? Bool == true && enabled.json["disabled_reason"] is NSNull)
        #expect(try fixture.send("PATCH", "/v1/webhooks/999", json: #"{"enabled": true}"#, headers: Self.admin).status == 404)
    }

    @Test func pingsAreDeliveriesListedNewestFirstInPagesAndRetried() throws {
        let fixture = try RoutesFixture(withKeys: true)
        defer { fixture.stop(); fixture.removeFiles() }
        let id = try #require(try created(fixture, #"{"url": "https://a.example/", "events": ["*"]}"#)["id"] as? Int)
        var pinged: [Int] = []
        for _ in 0..<3 {
            let ping = try fixture.send("POST", "/v1/webhooks/\(id)/ping", headers: Self.admin)
            #expect(ping.status == 202)
            #expect(ping.json["type"] as? String == "webhook.ping" && ping.json["state"] as? String == "pending")
            #expect((ping.json["event_id"] as? String)?.hasPrefix("msg_") == true && ping.json["attempts"] as? Int == 0)
            pinged.append(try #require(ping.json["id"] as? Int))
        }
        let page = try fixture.send("GET", "/v1/webhooks/\(id)/deliveries?limit=2", headers: Self.admin)
        #expect(page.status == 200)
        #expect((page.json["deliveries"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [pinged[2], pinged[1]])
        let next = try #require(page.json["next"] as? String)
        let last = try fixture.send("GET", next, headers: Self.admin)
        #expect((last.json["deliveries"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [pinged[0]] && last.json["next"] is NSNull)

        let detail = try fixture.send("GET", "/v1/webhooks/\(id)/deliveries/\(pinged[0])", headers: Self.admin)
        #expect(detail.status == 200 && (detail.json["attempt_log"] as? [Any])?.isEmpty == true)
        let retried = try fixture.send("POST", "/v1/webhooks/\(id)/deliveries/\(pinged[0])/retry", headers: Self.admin)
        #expect(retried.status == 202 && retried.json["state"] as? String == "pending" && retried.json["next_attempt_at"] is String)

        #expect(try fixture.send("GET", "/v1/webhooks/\(id)/deliveries/99999", headers: Self.admin).status == 404)
        #expect(try fixture.send("POST", "/v1/webhooks/\(id)/deliveries/99999/retry", headers: Self.admin).status == 404)
        #expect(try fixture.send("GET", "/v1/webhooks/\(id)/deliveries?limit=0", headers: Self.admin).status == 400)
        #expect(try fixture.send("GET", "/v1/webhooks/999/deliveries", headers: Self.admin).status == 404)
        #expect(try fixture.send("POST", "/v1/webhooks/999/ping", headers: Self.admin).status == 404)

        #expect(try fixture.send("DELETE", "/v1/webhooks/\(id)", headers: Self.admin).status == 204)
        #expect(try fixture.send("DELETE", "/v1/webhooks/\(id)", headers: Self.admin).status == 404)
        #expect(try fixture.send("GET", "/v1/webhooks/\(id)/deliveries", headers: Self.admin).status == 404)
        #expect(try fixture.send("GET", "/v1/webhooks/abc", headers: Self.admin).status == 404)
    }
}
