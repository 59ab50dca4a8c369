import Foundation
import PackdTestSupport
import Testing

/// Every documented error of the pack and event endpoints, from a real `packd serve` with API
/// keys: each answer is `application/problem+json` with the documented status and type, and (with
/// `PACKD_RECORD_RESPONSES`) is checked against openapi.yaml by `make test`.
@Suite struct APIErrorPathTests {
    static let readKey = "e2e-read-key-0123456789"
    static let writeKey = "e2e-write-key-0123456789"

    @Test func everyDocumentedErrorIsAPreciseProblem() throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("packd-keys-\(UUID().uuidString)")
        try "read:\(Self.readKey)\nwrite:\(Self.writeKey)\n".write(to: keys, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: keys) }
        let server = try PackdServer(arguments: ["--api-keys-file", keys.path, "--max-body-bytes", "4096"])
        defer { server.remove() }
        let write = ["Authorization": "Bearer \(Self.writeKey)"]
        let read = ["Authorization": "Bearer \(Self.readKey)"]
        let region: [String: Any] = ["tiles": ["https://tiles.example.org/{z}/{x}/{y}.png"], "bounds": [-10, -10, 10, 10],
                                     "min_zoom": 0, "max_zoom": 2]

        func expectProblem(_ reply: PackdReply, _ status: Int, _ type: String, pointer: String? = nil,
                           sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(reply.status == status, "\(reply.body)", sourceLocation: sourceLocation)
            #expect(reply.header("Content-Type")?.hasPrefix("application/problem+json") == true, sourceLocation: sourceLocation)
            #expect((reply.json["type"] as? String)?.hasSuffix(type) == true, "\(reply.body)", sourceLocation: sourceLocation)
            #expect(reply.json["status"] as? Int == status, sourceLocation: sourceLocation)
            if let pointer {
                let pointers = (reply.json["errors"] as? [[String: Any]] ?? []).compactMap { $0["pointer"] as? String }
                #expect(pointers.contains(pointer), "\(reply.body)", sourceLocation: sourceLocation)
            }
        }

        // Authentication and roles.
        expectProblem(try server.send("GET", "/v1/packs"), 401, "unauthorized")
        expectProblem(try server.send("GET", "/v1/packs", headers: ["Authorization": "Bearer wrong-key-0123456789"]), 401, "unauthorized")
        expectProblem(try server.send("POST", "/v1/packs", json: ["region": region], headers: read), 403, "forbidden")
        expectProblem(try server.send("GET", "/v1/events"), 401, "unauthorized")

        // Bodies: not JSON, wrong media type, too large, invalid region.
        expectProblem(try server.send("POST", "/v1/packs", body: Array(#"{"region": "#.utf8),
                                      headers: write.merging(["Content-Type": "application/json"]) { $1 }), 400, "malformed-request")
        expectProblem(try server.send("POST", "/v1/packs", body: Array("region=x".utf8),
                                      headers: write.merging(["Content-Type": "text/plain"]) { $1 }), 415, "unsupported-media-type")
        let large: [String: Any] = ["region": region, "name": String(repeating: "x", count: 5000)]
        expectProblem(try server.send("POST", "/v1/packs", json: large, headers: write), 413, "payload-too-large")
        var badZoom = region
        badZoom["max_zoom"] = 31
        expectProblem(try server.send("POST", "/v1/packs", json: ["region": badZoom], headers: write), 422, "validation-failed",
                      pointer: "/region/max_zoom")
        var badBounds = region
        badBounds["bounds"] = [10, -10, 20]
        expectProblem(try server.send("POST", "/v1/packs", json: ["region": badBounds], headers: write), 422, "validation-failed",
                      pointer: "/region/bounds")
        expectProblem(try server.send("POST", "/v1/packs", json: ["region": ["style_url": "ftp://example.org/style.json",
                                                                              "bounds": [0, 0, 1, 1], "min_zoom": 0, "max_zoom": 1]],
                                      headers: write), 422, "validation-failed", pointer: "/region/style_url")

        // Unknown packs, on every route that takes an id.
        expectProblem(try server.send("GET", "/v1/packs/424242", headers: read), 404, "not-found")
        expectProblem(try server.send("GET", "/v1/packs/424242/events", headers: read), 404, "not-found")
        expectProblem(try server.send("POST", "/v1/packs/424242/suspend", headers: write), 404, "not-found")
        expectProblem(try server.send("DELETE", "/v1/packs/424242", headers: write), 404, "not-found")
        expectProblem(try server.send("PATCH", "/v1/packs/424242", json: ["name": "x"], headers: write), 404, "not-found")

        // Idempotency: the same body replays the first pack, another body is a 422.
        let idempotent = write.merging(["Idempotency-Key": "provision-1"]) { $1 }
        let created = try server.send("POST", "/v1/packs", json: ["region": region, "name": "once", "start": false], headers: idempotent)
        #expect(created.status == 201)
        let replayed = try server.send("POST", "/v1/packs", json: ["region": region, "name": "once", "start": false], headers: idempotent)
        #expect(replayed.status == 201)
        #expect(replayed.json["id"] as? Int == created.json["id"] as? Int)
        #expect(replayed.header("Idempotent-Replayed") == "true")
        expectProblem(try server.send("POST", "/v1/packs", json: ["region": region, "name": "twice", "start": false], headers: idempotent),
                      422, "idempotency-key-reused")
        let listed = try server.send("GET", "/v1/packs", headers: read)
        #expect((listed.json["packs"] as? [Any])?.count == 1)

        // The events endpoints: a Last-Event-ID that is not an id; a read key in the query works.
        let packID = try #require(created.json["id"] as? Int)
        expectProblem(try server.send("GET", "/v1/packs/\(packID)/events", headers: read.merging(["Last-Event-ID": "abc"]) { $1 }),
                      400, "malformed-request")
        let browser = try server.events("/v1/packs/\(packID)/events?access_token=\(Self.readKey)")
        #expect(browser.status == 200)
        expectProblem(try server.send("GET", "/v1/events?access_token=wrong-key-0123456789"), 401, "unauthorized")
    }
}
