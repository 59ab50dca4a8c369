import Foundation
import Logging
import PackdTestSupport
import Server
import Testing

/// The access log is one line of fields per answered request (`method`, `path`, `status`,
/// `bytes`, `duration_ms`, `request_id`). The path only: an `access_token` in the query (how a
/// browser's EventSource authenticates) must never reach a log line or an error body.
@Suite struct AccessLogTests {
    private func accessLines(_ log: CapturedLog) -> [Logger.Metadata] {
        log.entries.filter { $0.level == .info && $0.message == "access" }.map(\.metadata)
    }

    private func text(_ value: Logger.Metadata.Value?) -> String? {
        value.map { "\($0)" }
    }

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

        #expect(eventually { accessLines(log).count >= 5 })
        let lines = accessLines(log)
        #expect(lines.contains { text($0["method"]) == "GET" && text($0["path"]) == "/v1/packs/7/events" && text($0["status"]) == "200" })
        #expect(lines.contains { text($0["path"]) == "/v1/nothing" && text($0["status"]) == "404" })
        let everything = log.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(!everything.contains("SECRET") && !everything.contains("access_token"))
        for response in [missing, wrongMethod, refused, badPath] {
            #expect(!response.text.contains("SECRET"))
        }
    }

    @Test func everyAnswerIsOneLineOfFields() throws {
        let log = CapturedLog()
        let server = try TestServer(log: log) { router, _ in
            router.get("/twelve") { _, responder in responder.respond(.text("twelve bytes")) }
        }
        defer { server.stop() }
        let reply = try server.client().request("GET /twelve?x=1 HTTP/1.1\r\nX-Request-Id: trace-42\r\n\r\n")
        #expect(reply.status == 200)
        #expect(eventually { !accessLines(log).isEmpty })
        let line = try #require(accessLines(log).first)
        #expect(Set(line.keys) == ["method", "path", "status", "bytes", "duration_ms", "request_id"])
        #expect(text(line["method"]) == "GET")
        #expect(text(line["path"]) == "/twelve")
        #expect(text(line["status"]) == "200")
        #expect(text(line["bytes"]) == "12")
        #expect(text(line["request_id"]) == "trace-42")
        // A number, not text with a unit: a collector can compare it.
        let duration = try #require(text(line["duration_ms"]).flatMap(Double.init))
        #expect(duration >= 0 && duration < 60_000)
    }

    @Test func requestIdIsTakenWhenPlausibleElseMadeAndAlwaysEchoed() throws {
        let log = CapturedLog()
        let server = try TestServer(log: log) { router, _ in
            router.get("/ok") { request, responder in
                // A handler cannot replace the id the server echoes and logs.
                var response = HTTPResponse.text(request.requestID)
                response.headers.set("X-Request-Id", "forged-by-handler")
                responder.respond(response)
            }
        }
        defer { server.stop() }
        let client = try server.client()
        let offered = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let taken = try client.request("GET /ok HTTP/1.1\r\nX-Request-Id: \(offered)\r\n\r\n")
        #expect(taken.header("X-Request-Id") == offered)
        #expect(taken.text == offered)

        let first = try client.request("GET /ok HTTP/1.1\r\n\r\n")
        let second = try client.request("GET /ok HTTP/1.1\r\n\r\n")
        let made = [first, second].compactMap { $0.header("X-Request-Id") }
        #expect(made.count == 2 && made[0] != made[1])
        #expect(made.allSatisfy { !$0.isEmpty && $0.utf8.count <= 128 && $0 != "forged-by-handler" })
        #expect(first.text == made[0])

        // Untrusted values are never echoed: quotes and spaces, and anything over 128 bytes.
        let hostile = #"x" onmouseover="alert(1)"#
        let tooLong = String(repeating: "a", count: 129)
        for value in [hostile, tooLong] {
            let reply = try client.request("GET /ok HTTP/1.1\r\nX-Request-Id: \(value)\r\n\r\n")
            let echoed = try #require(reply.header("X-Request-Id"))
            #expect(echoed != value && !echoed.contains("\"") && !echoed.hasPrefix("aaaa"))
        }
        let longest = String(repeating: "b", count: 128)
        #expect(try client.request("GET /ok HTTP/1.1\r\nX-Request-Id: \(longest)\r\n\r\n").header("X-Request-Id") == longest)

        // A 404 answered by the router carries one too, and the log names the same id.
        let missing = try client.request("GET /nowhere HTTP/1.1\r\nX-Request-Id: lost-1\r\n\r\n")
        #expect(missing.status == 404 && missing.header("X-Request-Id") == "lost-1")
        #expect(eventually { accessLines(log).count >= 7 })
        let ids = accessLines(log).compactMap { text($0["request_id"]) }
        #expect(ids.contains(offered) && ids.contains(made[0]) && ids.contains(made[1]) && ids.contains("lost-1"))
        #expect(!ids.contains(hostile) && !ids.contains(tooLong))
    }

    /// `packd serve --log-format json`: the access line is a JSON object whose numbers are numbers.
    @Test func jsonAccessLinesOfTheRealServerCarryTypedFields() throws {
        let packd = try PackdServer(arguments: ["--log-format", "json"], logLevel: "info", capturesOutput: true)
        defer { packd.remove() }
        let reply = try packd.send("GET", "/healthz?access_token=SECRET-TOKEN-123", headers: ["X-Request-Id": "json-line-1"])
        #expect(reply.status == 200)
        #expect(reply.header("X-Request-Id") == "json-line-1")
        var access: [String: Any]?
        #expect(eventually {
            let lines = String(decoding: packd.standardError, as: UTF8.self).split(separator: "\n")
            access = lines.lazy.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .first { $0["message"] as? String == "access" && $0["request_id"] as? String == "json-line-1" }
            return access != nil
        })
        let line = try #require(access)
        #expect(line["label"] as? String == "packd.http")
        #expect(line["method"] as? String == "GET")
        #expect(line["path"] as? String == "/healthz")
        #expect((line["status"] as? NSNumber)?.intValue == 200)
        #expect((line["bytes"] as? NSNumber)?.intValue == reply.body.count)
        #expect(line["duration_ms"] is NSNumber)
        #expect(!String(decoding: packd.standardError, as: UTF8.self).contains("SECRET-TOKEN"))
    }
}
