import Foundation
import Glibc
import PackdTestSupport
import Store
import Testing

/// `packd serve` as a real process: invalidate and check-update over HTTP against an upstream
/// that changes after the download, checking the wiring of Jobs into the API from the outside.
@Suite struct ServeRevalidationTests {
    @Test func invalidateAndCheckUpdateOverHTTP() throws {
        let upstream = try RevisedUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        func send(_ method: String, _ path: String, _ body: [String: Any]? = nil) throws -> BinaryExchange {
            try server.exchange(method, path, json: body)
        }
        func pack(_ id: Int) -> [String: Any] { server.pack(id) ?? [:] }

        let created = try send("POST", "/v1/packs", ["start": true, "region": upstream.region])
        let id = try #require(try created.decodedJSON()["id"] as? Int)
        #expect(eventually { pack(id)["state"] as? String == "complete" })
        let total = try #require((pack(id)["progress"] as? [String: Any])?["completed_resources"] as? Int)

        #expect(try send("POST", "/v1/packs/\(id)/check-update").decodedJSON()["update_available"] as? Bool == false)
        upstream.change(tiles: ["/tiles/0/0/0.pbf", "/tiles/1/0/0.pbf"])
        let started = try send("POST", "/v1/packs/\(id)/invalidate")
        #expect(started.status == 202)
        var finished: [String: Any] = [:]
        #expect(eventually {
            finished = pack(id)
            return finished["state"] as? String == "complete"
                && (finished["invalidation"] as? [String: Any])?["completed_at"] is String
        })
        let invalidation = try #require(finished["invalidation"] as? [String: Any])
        #expect(invalidation["updated"] as? Int == 2 && invalidation["removed"] as? Int == 0
                && invalidation["unchanged"] as? Int == total - 2, "\(invalidation)")
        #expect(try send("POST", "/v1/packs/\(id)/invalidate").status == 202, "complete again: may be revalidated again")
        #expect(eventually { (pack(id)["invalidation"] as? [String: Any])?["completed_at"] is String })

        // The counts reach the event stream (and its durable log) as a progress event.
        let reader = try StoreReader(path: server.databasePath)
        #expect(eventually {
            ((try? reader.events(after: 0, packID: Int64(id))) ?? []).contains {
                $0.type == "progress" && $0.json.contains(#""invalidation":{"#) && $0.json.contains(#""updated":2"#)
            }
        })

        upstream.reviseStyle()
        #expect(try send("POST", "/v1/packs/\(id)/check-update").decodedJSON()["update_available"] as? Bool == true)
        upstream.fail("/style.json", status: 500)
        let failed = try send("POST", "/v1/packs/\(id)/check-update")
        let problem = try failed.decodedJSON()
        #expect(failed.status == 502 && problem["upstream_status"] as? Int == 500)
        #expect(pack(id)["update_available"] as? Bool == true, "a failed check leaves the pack unchanged")

        #expect(server.stop() == 0)
    }
}
