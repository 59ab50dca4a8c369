import Fetch
import PackdTestSupport
import Foundation
import Testing

@Suite struct FetcherTransferTests {
    @Test func manyConcurrentTransfersReturnByteIdenticalBodies() throws {
        let upstream = try TestUpstream { request in
            let seed = Int(request.target.dropFirst(3)) ?? 0
            return .respond(status: 200, headers: [("Content-Type", "application/x-protobuf")],
                            body: testBody(seed: seed, size: 100 + seed * 97 % 40_000))
        }
        defer { upstream.stop() }
        let harness = try FetchHarness(FetchConfiguration(maxTransfers: 32, maxTransfersPerHost: 32,
                                                          addressPolicy: .loopbackForTests))
        defer { harness.close() }
        let count = 600
        let results = try harness.fetchAll((0..<count).map { FetchRequest(url: upstream.url("/t/\($0)")) })
        for (seed, result) in results.enumerated() {
            let response = try #require(result.response, "transfer \(seed): \(String(describing: result.error))")
            #expect(response.status == 200)
            #expect(response.body == testBody(seed: seed, size: 100 + seed * 97 % 40_000))
            #expect(response.headers.contentType == "application/x-protobuf")
            #expect(response.effectiveURL == upstream.url("/t/\(seed)"))
        }
        #expect(upstream.requests.count == count)
        // Keep-alive: far fewer connections than requests.
        #expect(upstream.connectionsAccepted <= 64)
    }

    /// A `mapbox://` URL, as a MapLibre database stores it, is fetched from the server a rule maps
    /// the scheme to; the response carries the canonical `mapbox://` URL. Without a rule it is refused.
    @Test func aRuleMapsANonHTTPSchemeToAServer() throws {
        let upstream = try TestUpstream { request in .respond(status: 200, body: Array(request.target.utf8)) }
        defer { upstream.stop() }
        let rule = UpstreamRule(prefix: "mapbox://", rewrittenPrefix: upstream.url("/mapbox/"))
        let harness = try FetchHarness(FetchConfiguration(addressPolicy: .loopbackForTests, rules: [rule]))
        defer { harness.close() }
        let response = try #require(try harness.fetch(FetchRequest(url: "mapbox://styles/mapbox/streets-v11")).response)
        #expect(response.status == 200)
        #expect(response.body == Array("/mapbox/styles/mapbox/streets-v11".utf8))
        #expect(response.effectiveURL == "mapbox://styles/mapbox/streets-v11")

        let plain = try FetchHarness(FetchConfiguration(addressPolicy: .loopbackForTests))
        defer { plain.close() }
        #expect(try plain.fetch(FetchRequest(url: "mapbox://styles/mapbox/streets-v11")).response == nil)
        #expect(upstream.requests.count == 1)
    }

    @Test func perHostLimitBoundsConcurrentRequests() throws {
        let upstream = try TestUpstream { _ in .delayed(.milliseconds(40), .respond(status: 200, body: [1, 2, 3])) }
        defer { upstream.stop() }
        let harness = try FetchHarness(FetchConfiguration(maxTransfers: 32, maxTransfersPerHost: 3,
                                                          addressPolicy: .loopbackForTests))
        defer { harness.close() }
        let results = try harness.fetchAll((0..<30).map { FetchRequest(url: upstream.url("/\($0)")) })
        #expect(results.allSatisfy { $0.response?.status == 200 })
        #expect(upstream.maxConcurrentRequests <= 3)
        #expect(upstream.maxConcurrentRequests >= 2)
        #expect(upstream.connectionsAccepted <= 3)
    }

    @Test func conditionalRequestGets304WithValidatorsSent() throws {
        let upstream = try TestUpstream { request in
            if request.headers["if-none-match"] == "\"v7\"" { return .respond(status: 304, headers: [("ETag", "\"v7\"")]) }
            return .respond(status: 200, headers: [("ETag", "\"v7\""), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
                                                   ("Cache-Control", "max-age=60"), ("Expires", "Thu, 01 Dec 2094 16:00:00 GMT")],
                            body: Array("fresh".utf8))
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let first = try #require(try harness.fetch(FetchRequest(url: upstream.url("/style.json"))).response)
        #expect(first.status == 200)
        #expect(first.body == Array("fresh".utf8))
        #expect(first.headers.etag == "\"v7\"")
        #expect(first.headers.lastModified == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(first.headers.cacheControl == "max-age=60")
        #expect(first.headers.expires == "Thu, 01 Dec 2094 16:00:00 GMT")

        let again = try #require(try harness.fetch(FetchRequest(url: upstream.url("/style.json"), ifNoneMatch: first.headers.etag,
                                                                ifModifiedSince: 784_111_777)).response)
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        let sent = try #require(upstream.requests.last)
        #expect(sent.headers["if-modified-since"] == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test func gzipBodyIsDeliveredAsReceived() throws {
        let plain = Array(String(repeating: "{\"layers\":[]}", count: 500).utf8)
        let compressed = gzip(plain)
        #expect(!compressed.isEmpty && compressed.count < plain.count)
        let upstream = try TestUpstream { request in
            guard request.headers["accept-encoding"]?.contains("gzip") == true else { return .respond(status: 200, body: plain) }
            return .respond(status: 200, headers: [("Content-Encoding", "gzip")], body: compressed)
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let response = try #require(try harness.fetch(FetchRequest(url: upstream.url("/s.json"))).response)
        #expect(response.headers.contentEncoding == "gzip")
        #expect(response.body == compressed)
    }

    @Test func serverErrorsAndHeadAreResponsesNotErrors() throws {
        let upstream = try TestUpstream { request in
            request.target == "/fail"
                ? .respond(status: 503, headers: [("Retry-After", "1")], body: Array("busy".utf8))
                : .respond(status: 200, body: Array(repeating: 7, count: 1000))
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let results = try harness.fetchAll([FetchRequest(url: upstream.url("/fail")),
                                            FetchRequest(url: upstream.url("/head"), method: .head)])
        let failed = try #require(results[0].response)
        #expect(failed.status == 503)
        #expect(failed.headers.retryAfter == "1")
        let head = try #require(results[1].response)
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(upstream.requests.map(\.method).sorted() == ["GET", "HEAD"])
    }

    @Test func redirectsAreFollowedAndBounded() throws {
        let upstream = try TestUpstream { request in
            switch request.target {
            case "/old": .respond(status: 301, headers: [("Location", "/new")])
            case "/new": .respond(status: 200, body: Array("moved".utf8))
            default: .respond(status: 302, headers: [("Location", "/loop\(request.target.count)")])
            }
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let moved = try #require(try harness.fetch(FetchRequest(url: upstream.url("/old"))).response)
        #expect(moved.body == Array("moved".utf8))
        #expect(moved.redirects == 1)
        #expect(moved.effectiveURL == upstream.url("/new"))

        let before = upstream.requests.count
        let looping = try harness.fetch(FetchRequest(url: upstream.url("/loop")))
        #expect(looping.error == .tooManyRedirects(limit: 5))
        #expect(upstream.requests.count - before == 6)
    }

    @Test func pausedHostWaitsAndRateLimitSpacesRequests() throws {
        let upstream = try TestUpstream { _ in .respond(status: 200, body: [1]) }
        defer { upstream.stop() }
        let harness = try FetchHarness(FetchConfiguration(requestsPerSecondPerHost: 10, addressPolicy: .loopbackForTests))
        defer { harness.close() }
        let pausedUntil = ContinuousClock.now + .milliseconds(300)
        try harness.thread.sync { harness.fetcher.pauseHost(of: upstream.url("/any"), until: pausedUntil) }
        let start = ContinuousClock.now
        let results = try harness.fetchAll((0..<15).map { FetchRequest(url: upstream.url("/\($0)")) })
        #expect(results.allSatisfy { $0.response?.status == 200 })
        let arrivals = upstream.requests.map(\.receivedAt).sorted()
        #expect(try #require(arrivals.first) >= pausedUntil)
        // A burst of 10, then 5 more at 10/s: the last cannot arrive before ~0.5 s after the first.
        #expect(try #require(arrivals.last) - arrivals[0] >= .milliseconds(400))
        #expect(ContinuousClock.now - start >= .milliseconds(700))
    }

    @Test func invalidRequestsFailWithoutTraffic() throws {
        let upstream = try TestUpstream { _ in .respond(status: 200) }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let results = try harness.fetchAll([
            FetchRequest(url: "ftp://127.0.0.1/x"),
            FetchRequest(url: "file:///etc/passwd"),
            FetchRequest(url: "not a url"),
            FetchRequest(url: upstream.url("/x"), headers: [("X-Evil", "a\r\nHost: other")]),
            FetchRequest(url: upstream.url("/x"), headers: [("Bad Name", "v")]),
            FetchRequest(url: upstream.url("/x"), ifNoneMatch: "\"a\"\r\nX: y"),
        ])
        #expect(results.map(\.error) == [.unsupportedScheme, .unsupportedScheme, .invalidURL, .invalidHeader,
                                          .invalidHeader, .invalidHeader])
        #expect(upstream.requests.isEmpty)
    }
}
