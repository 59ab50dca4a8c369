import Fetch
import PackdTestSupport
import Foundation
import Testing

@Suite struct FetcherSafetyTests {
    @Test func loopbackIsRefusedWithoutAnAllowRule() throws {
        let upstream = try TestUpstream { _ in .respond(status: 200, body: [1]) }
        defer { upstream.stop() }
        let harness = try FetchHarness(FetchConfiguration(addressPolicy: AddressPolicy()))
        defer { harness.close() }
        let result = try harness.fetch(FetchRequest(url: upstream.url("/x")))
        #expect(result.error == .blockedAddress)
        #expect(result.error?.code == "blocked_address")
        #expect(upstream.connectionsAccepted == 0)
    }

    @Test func allowedHostsCoverOnlyThemselves() throws {
        let upstream = try TestUpstream { _ in .respond(status: 200, body: [1]) }
        defer { upstream.stop() }
        let harness = try FetchHarness(FetchConfiguration(addressPolicy: AddressPolicy(allowedHosts: ["127.0.0.1"])))
        defer { harness.close() }
        let results = try harness.fetchAll([FetchRequest(url: upstream.url("/x")),
                                            FetchRequest(url: "http://localhost:\(upstream.port)/y")])
        #expect(results[0].response?.status == 200)
        #expect(results[1].error == .blockedAddress)
        #expect(upstream.requests.map(\.target) == ["/x"])
    }

    @Test func redirectToABlockedAddressIsRefused() throws {
        let blocked = try TestUpstream { _ in .respond(status: 200, body: Array("internal".utf8)) }
        defer { blocked.stop() }
        let allowed = try TestUpstream { _ in .respond(status: 302, headers: [("Location", "http://localhost:\(blocked.port)/admin")]) }
        defer { allowed.stop() }
        let harness = try FetchHarness(FetchConfiguration(addressPolicy: AddressPolicy(allowedHosts: ["127.0.0.1"])))
        defer { harness.close() }
        let result = try harness.fetch(FetchRequest(url: allowed.url("/style.json")))
        #expect(result.error == .blockedAddress)
        #expect(allowed.requests.count == 1)
        #expect(blocked.connectionsAccepted == 0)
    }

    @Test func redirectToAnotherSchemeIsRefused() throws {
        let upstream = try TestUpstream { _ in .respond(status: 302, headers: [("Location", "file:///etc/passwd")]) }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        #expect(try harness.fetch(FetchRequest(url: upstream.url("/r"))).error == .unsupportedScheme)
    }

    @Test func ruleCredentialsReachTheUpstreamButNothingReturned() throws {
        let headerSecret = "hdr-Secret-7f3a"
        let querySecret = "qry-Secret-91bc"
        let upstream = try TestUpstream { request in
            switch request.target {
            // An upstream that echoes the token back into a redirect and headers.
            case let target where target.hasPrefix("/a?"):
                .respond(status: 302, headers: [("Location", "/b?token=\(querySecret)&v=2")])
            case let target where target.hasPrefix("/b?"):
                .respond(status: 200, headers: [("Set-Cookie", "s=\(querySecret)"), ("X-Echo", headerSecret),
                                                ("Content-Type", "text/plain")], body: [1])
            default: .respond(status: 404)
            }
        }
        defer { upstream.stop() }
        let prefix = upstream.url("/")
        let rule = UpstreamRule(prefix: prefix, headers: [.init("X-Api-Key", headerSecret)], queryItems: [.init("token", querySecret)])
        let harness = try FetchHarness(FetchConfiguration(addressPolicy: .loopbackForTests, rules: [rule]))
        defer { harness.close() }
        let results = try harness.fetchAll([FetchRequest(url: upstream.url("/a?v=1")),
                                            FetchRequest(url: upstream.url("/a?v=1"), timeouts: .init(totalMilliseconds: 1))])

        let seen = upstream.requests
        #expect(seen.count >= 2)
        for request in seen {
            #expect(request.headers["x-api-key"] == headerSecret)
            #expect(request.target.contains("token=\(querySecret)"))
        }
        let response = try #require(results[0].response)
        #expect(response.effectiveURL == upstream.url("/b?v=2"))
        // Everything handed back, printed: no trace of either secret.
        let everything = "\(results[0]) \(results[1]) \(response) \(results.compactMap(\.error))"
        #expect(!everything.contains(headerSecret))
        #expect(!everything.contains(querySecret))
        #expect(!everything.lowercased().contains("secret"))
    }
}
