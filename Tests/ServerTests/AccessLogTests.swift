import Foundation
import PackdTestSupport
import Server
import Testing

/// The access log names the path only: an `access_token` in the query (how a browser's
/// EventSource authenticates) must never reach a log line or an error body.
@Suite struct AccessLogTests {
    @Test func accessTokenInTheQueryIsNeverLogged() throws {
        let log = CapturedLog()
        let server = try TestServer(log: log) { router, _ in
            router.get("/v1/packs/{id}/events") { _, responder in responder.respond(.text("events")) }
            router.post("/v1/packs") { _, responder in responder.respond(.text("created")) }
        }
        defer { server.stop() }
        let client = try server.client()
        let ok = try client.request("GET /v1/packs/7/events?after=3&access_token=SECRET HTTP/1.1\r\n\r\n")
        #expect(ok.status == 200)
        let missing = try client.request("GET /v1/nothing?access_token=SECRET HTTP/1.1\r\n\r\n")
        #expect(missing.status == 404)
        let wrongMethod = try client.request("DELETE /v1/packs?access_token=SECRET HTTP/1.1\r\n\r\n")
        #expect(wrongMethod.status == 405)
        let refused = try client.request("GET /v1/packs/7/events?access_token=SECRET HTTP/1.1\r\nExpect: x\r\n\r\n")
        #expect(refused.status == 417)
        let badPath = try server.client().request("GET /v1/packs/%FF/events?access_token=SECRET HTTP/1.1\r\n\r\n")
        #expect(badPath.status == 400)

        #expect(eventually { log.entries.filter { $0.level == .info }.count >= 5 })
        let lines = log.entries.map(\.message)
        #expect(lines.contains { $0.hasPrefix("GET /v1/packs/7/events 200 ") })
        #expect(lines.contains { $0.hasPrefix("GET /v1/nothing 404 ") })
        #expect(!lines.contains { $0.contains("SECRET") || $0.contains("access_token") })
        for response in [missing, wrongMethod, refused, badPath] {
            #expect(!response.text.contains("SECRET"))
        }
    }
}
