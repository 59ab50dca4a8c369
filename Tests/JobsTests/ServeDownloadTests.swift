import Foundation
import Glibc
import PackdTestSupport
import Testing

/// `packd serve` as a real process downloading from the in-process upstream: the wiring of the
/// scheduler into the API, checked from the outside (POST a pack, poll until complete).
@Suite struct ServeDownloadTests {
    @Test func postedPackCompletesOverHTTPAndShutdownIsClean() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let port = server.port
        let body: [String: Any] = ["name": "e2e", "start": true, "region": PackDownloadTests.region(upstream, maxZoom: 5)]
        let created = try BinaryExchange.send(port: port, method: "POST", path: "/v1/packs",
                                            body: try JSONSerialization.data(withJSONObject: body))
        #expect(created.status == 201 || created.status == 202, "\(String(decoding: created.body, as: UTF8.self))")
        let packID = try #require(try created.decodedJSON()["id"] as? Int)

        let last = server.waitForEnd(packID)
        #expect(last["state"] as? String == "complete", "\(last)")
        let progress = try #require(last["progress"] as? [String: Any])
        let planned = try PackDownloadTests.planned(upstream, maxZoom: 5).count
        #expect(progress["completed_resources"] as? Int == planned)
        #expect(progress["expected_resources"] as? Int == planned)
        #expect(progress["expected_is_precise"] as? Bool == true)

        #expect(server.stop() == 0)
    }
}
