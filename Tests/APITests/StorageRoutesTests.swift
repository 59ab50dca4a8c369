import Foundation
import Testing
@testable import API

/// `/v1/storage…` and `/v1/resources` through a real server and database.
@Suite struct StorageRoutesTests {
    func withServer(_ body: (RoutesFixture) throws -> Void) throws {
        let fixture = try RoutesFixture()
        defer {
            fixture.stop()
            fixture.removeFiles()
        }
        try body(fixture)
    }

    @Test func storageFiguresFollowChanges() throws {
        try withServer { server in
            let initial = try server.send("GET", "/v1/storage")
            #expect(initial.status == 200)
            #expect((initial.json["ambient_cache"] as? [String: Any])?["maximum_size"] as? Int == 50 << 20)
            #expect((initial.json["tile_limit"] as? [String: Any])?["maximum"] is NSNull)

            let resized = try server.send("PUT", "/v1/storage/ambient-cache", json: #"{"maximum_size": 1000}"#)
            #expect(resized.status == 200)
            #expect((resized.json["ambient_cache"] as? [String: Any])?["maximum_size"] as? Int == 1000)
            #expect(try server.send("PUT", "/v1/storage/ambient-cache", json: #"{"maximum_size": -1}"#).status == 422)
            #expect(try server.send("PUT", "/v1/storage/ambient-cache", json: #"{"maximum": 1}"#).status == 422)

            let limited = try server.send("PUT", "/v1/storage/tile-limit", json: #"{"maximum": 7}"#)
            #expect((limited.json["tile_limit"] as? [String: Any])?["maximum"] as? Int == 7)
            let unlimited = try server.send("PUT", "/v1/storage/tile-limit", json: #"{"maximum": null}"#)
            #expect((unlimited.json["tile_limit"] as? [String: Any])?["maximum"] is NSNull)
            #expect(try server.send("PUT", "/v1/storage/tile-limit", json: "{}").status == 422)
            #expect(try server.send("PUT", "/v1/storage/tile-limit", json: #"{"maximum": "7"}"#).status == 422)

            #expect(try server.send("DELETE", "/v1/storage/ambient-cache").status == 204)
            #expect(try server.send("POST", "/v1/storage/ambient-cache/invalidate").status == 204)
        }
    }

    @Test func resetNeedsConfirmationAndRemovesEveryPack() throws {
        try withServer { server in
            for _ in 0..<3 {
                #expect(try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion())}"#).status == 201)
            }
            #expect(try server.send("GET", "/v1/storage").json["packs"] as? Int == 3)
            let unconfirmed = try server.send("POST", "/v1/storage/reset", json: #"{"confirm": "yes"}"#)
            #expect(unconfirmed.status == 422)
            #expect((unconfirmed.json["errors"] as? [[String: Any]])?.first?["pointer"] as? String == "/confirm")
            #expect(try server.send("GET", "/v1/storage").json["packs"] as? Int == 3)
            #expect(try server.send("POST", "/v1/storage/reset", json: #"{"confirm": "reset"}"#).status == 204)
            #expect(try server.send("GET", "/v1/storage").json["packs"] as? Int == 0)
            #expect((try server.send("GET", "/v1/packs").json["packs"] as? [Any])?.isEmpty == true)
        }
    }

    @Test func preloadedResourceIsServedWithItsCachingHeaders() throws {
        try withServer { server in
            let url = "https://example.org/styles/basic/style.json"
            let target = "/v1/resources?url=" + url.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            #expect(try server.send("GET", target).status == 404)
            let body = Array(#"{"version": 8, "layers": []}"#.utf8)
            let stored = try server.send("PUT", target, body: body, headers: [
                "Content-Type": "application/json", "ETag": "\"v1\"", "Last-Modified": "Tue, 10 Nov 2026 08:00:00 GMT",
                "Expires": "Wed, 11 Nov 2037 08:00:00 GMT", "Cache-Control": "max-age=60, must-revalidate",
            ])
            #expect(stored.status == 201)
            let replaced = try server.send("PUT", target, body: body, headers: ["ETag": "\"v2\""])
            #expect(replaced.status == 204)

            let read = try server.send("GET", target)
            #expect(read.status == 200)
            #expect(read.body == String(decoding: body, as: UTF8.self))
            #expect(read.header("ETag") == "\"v2\"")
            #expect(read.header("Content-Type") == "application/json")
            #expect(try server.send("GET", target, headers: ["If-None-Match": "\"v2\""]).status == 304)

            let first = try server.send("PUT", target + "2", body: body, headers: [
                "ETag": "\"e\"", "Last-Modified": "Tue, 10 Nov 2026 08:00:00 GMT", "Expires": "Wed, 11 Nov 2037 08:00:00 GMT",
            ])
            #expect(first.status == 201)
            let dated = try server.send("GET", target + "2")
            #expect(dated.header("Last-Modified") == "Tue, 10 Nov 2026 08:00:00 GMT")
            #expect(dated.header("Expires") == "Wed, 11 Nov 2037 08:00:00 GMT")

            let badDate = try server.send("PUT", target, body: body, headers: ["Expires": "soon"])
            #expect(badDate.status == 422)
            #expect((badDate.json["errors"] as? [[String: Any]])?.first?["parameter"] as? String == "Expires")
            #expect(try server.send("GET", "/v1/resources?url=ftp%3A%2F%2Fexample.org%2Fx").status == 400)
            #expect(try server.send("GET", "/v1/resources?url=https%3A%2F%2Fuser%40example.org%2Fx").status == 400)
            #expect(try server.send("GET", "/v1/resources").status == 400)

            #expect(try server.send("PUT", "/v1/storage/ambient-cache", json: #"{"maximum_size": 0}"#).status == 200)
            let refused = try server.send("PUT", "/v1/resources?url=https%3A%2F%2Fexample.org%2Fnew.png", body: [1, 2, 3])
            #expect(refused.status == 409)
        }
    }
}
