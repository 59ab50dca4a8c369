import Foundation
import Packs
import Server
import Store
import Testing
@testable import API

/// `GET /v1/resources?fetch=true` against a scripted upstream: what is stored, what is served
/// when the upstream fails, and the ambient cache's switch.
@Suite struct ResourceReadThroughTests {
    static let url = "https://maps.example/sprite.json"
    static let target = "/v1/resources?url=https%3A%2F%2Fmaps.example%2Fsprite.json"

    /// The url parameter is read scalar by scalar: a combining mark right after `//` (it merges
    /// with the slash into one Character) is a host like any other, and user info behind it is
    /// still found.
    @Test func urlParameterIsCheckedByScalarsNotCharacters() throws {
        func check(_ url: String) -> Result<String, Problem> {
            let query = url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let request = HTTPRequest(method: .get, target: "/v1/resources?url=" + query)
            return Result { () throws(Problem) in try ResourceRoutes.resourceURL(request) }
        }
        #expect(try check("hTtp://\u{1F3FB}/tile").get() == "hTtp://\u{1F3FB}/tile")
        #expect(try check("https://\u{301}maps.example/a").get() == "https://\u{301}maps.example/a")
        if case .success = check("http://\u{301}user:pw@maps.example/a") { Issue.record("user info behind a combining mark was accepted") }
        if case .success = check("ftp://maps.example/a") { Issue.record("ftp was accepted") }
    }

    /// A URL libcurl would refuse is not fetched: 422 naming the parameter (schemathesis found
    /// `htTpS://^🌥?b`, which got a 502 from the transfer).
    @Test func aURLLibcurlRefusesIs422AndNotFetched() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            for url in ["htTpS://^🌥?b", "http://ålč¨/a"] {
                let query = url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                let refused = try server.send("GET", "/v1/resources?fetch=true&url=" + query)
                #expect(refused.status == 422, "\(url)")
                let errors = refused.json["errors"] as? [[String: Any]]
                #expect(errors?.first?["parameter"] as? String == "url")
                #expect((errors?.first?["detail"] as? String)?.contains("libcurl") == true)
            }
            #expect(upstream.requests.isEmpty)
        }
    }

    @Test func aMissIsFetchedStoredWithItsCacheHeadersAndServed() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            upstream.serve(Self.url, #"{"a": 1}"#, cache: HTTPCacheHeaders(expires: 4_000_000_000, etag: "\"v1\""))
            let fetched = try server.send("GET", Self.target + "&fetch=true")
            #expect(fetched.status == 200)
            #expect(fetched.body == #"{"a": 1}"#)
            #expect(fetched.header("ETag") == "\"v1\"")
            #expect(fetched.header("Content-Type") == "application/json")
            let stored = try server.send("GET", Self.target)
            #expect(stored.status == 200 && stored.body == #"{"a": 1}"# && stored.header("ETag") == "\"v1\"")
            #expect(upstream.requests == [Self.url])
            #expect(try server.send("GET", "/metrics").body.contains("packd_downloaded_resources_total 1\n"))
            // The upstream's error status is a 502 carrying it.
            upstream.answer("https://maps.example/b.json", .success(UpstreamResponse(status: 500, body: [])))
            let failed = try server.send("GET", "/v1/resources?url=https%3A%2F%2Fmaps.example%2Fb.json&fetch=true")
            #expect(failed.status == 502)
            #expect(failed.json["upstream_status"] as? Int == 500)
        }
    }

    @Test func anExpiredCopyIsRefetchedAndServedWhenTheUpstreamFails() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            #expect(try server.send("PUT", Self.target, body: Array("old".utf8),
                                    headers: ["Expires": "Thu, 01 Jan 2015 00:00:00 GMT"]).status == 201)
            upstream.answer(Self.url, .failure(UpstreamFailure(code: "timeout")))
            let stale = try server.send("GET", Self.target + "&fetch=true")
            #expect(stale.status == 200 && stale.body == "old")
            upstream.serve(Self.url, "new")
            #expect(try server.send("GET", Self.target + "&fetch=true").body == "new")
            #expect(try server.send("GET", Self.target).body == "new")
            #expect(upstream.requests.count == 2)
        }
    }

    @Test func withTheAmbientCacheDisabledAFetchIsServedButNotKept() throws {
        try RoutesFixture.using { server throws in
            let upstream = server.scriptedUpstream()
            upstream.serve(Self.url, "body")
            #expect(try server.send("PUT", "/v1/storage/ambient-cache", json: #"{"maximum_size": 0}"#).status == 200)
            #expect(try server.send("GET", Self.target + "&fetch=true").body == "body")
            #expect(try server.send("GET", Self.target).status == 404)
        }
    }
}
