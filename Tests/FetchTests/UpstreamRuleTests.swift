@testable import Fetch
import Testing

@Suite struct UpstreamRuleTests {
    let rules = UpstreamRules([
        UpstreamRule(prefix: "https://tiles.example/", headers: [.init("X-Api-Key", "hdr-secret-1")],
                     queryItems: [.init("key", "q secret&2")]),
        UpstreamRule(prefix: "https://tiles.example/private/", rewrittenPrefix: "http://mirror.internal:8080/p/"),
    ])

    @Test func credentialsAreAddedOnTheWireOnly() {
        let wire = rules.wire(for: "https://tiles.example/3/1/2.pbf?v=1")
        #expect(wire.url == "https://tiles.example/3/1/2.pbf?v=1&key=q%20secret%262")
        #expect(wire.headers == [.init("X-Api-Key", "hdr-secret-1")])
        #expect(rules.canonical(forWire: wire.url) == "https://tiles.example/3/1/2.pbf?v=1")
        #expect(rules.wire(for: "https://other.example/a").url == "https://other.example/a")
    }

    @Test func longestPrefixWinsAndRewriteIsUndone() {
        let wire = rules.wire(for: "https://tiles.example/private/a.json")
        #expect(wire.url == "http://mirror.internal:8080/p/a.json")
        #expect(wire.headers.isEmpty)
        #expect(rules.canonical(forWire: wire.url) == "https://tiles.example/private/a.json")
    }

    @Test func injectedParametersAreStrippedWhereverTheyAppear() {
        #expect(rules.canonical(forWire: "https://tiles.example/x?key=q%20secret%262") == "https://tiles.example/x")
        #expect(rules.canonical(forWire: "https://tiles.example/x?a=1&key=zzz&b=2#f") == "https://tiles.example/x?a=1&b=2#f")
    }

    @Test func redactionRemovesRawAndEncodedSecrets() {
        let text = "failed https://tiles.example/x?key=q%20secret%262 with hdr-secret-1 and q secret&2"
        let redacted = rules.redact(text)
        #expect(!redacted.contains("secret"))
        #expect(redacted.contains("[redacted]"))
    }

    @Test func policyFieldsComeFromTheLongestPrefixThatSetsThem() {
        let rules = UpstreamRules([
            UpstreamRule(prefix: "https://tiles.example/", policy: HostPolicy(maxTransfers: 2, requestsPerSecond: 5)),
            UpstreamRule(prefix: "https://tiles.example/fast/", policy: HostPolicy(maxTransfers: 64)),
            UpstreamRule(prefix: "https://tiles.example/fast/private/", headers: [.init("X-Key", "k")]),
        ])
        #expect(rules.policy(for: "https://tiles.example/a.pbf") == HostPolicy(maxTransfers: 2, requestsPerSecond: 5))
        #expect(rules.policy(for: "https://tiles.example/fast/private/a.pbf") == HostPolicy(maxTransfers: 64, requestsPerSecond: 5))
        #expect(rules.policy(for: "https://other.example/a.pbf") == HostPolicy())
        // Two policies meeting on one host: the stricter of each field.
        let merged = HostPolicy(maxTransfers: 64, adaptive: true).tightened(by: HostPolicy(maxTransfers: 2, requestsPerSecond: 5,
                                                                                            adaptive: false))
        #expect(merged == HostPolicy(maxTransfers: 2, requestsPerSecond: 5, adaptive: false))
    }

    @Test func percentEncodingKeepsOnlyUnreserved() {
        #expect(UpstreamRules.percentEncode("aZ09-._~ /?&=#%é") == "aZ09-._~%20%2F%3F%26%3D%23%25%C3%A9")
    }

    /// MapLibre's stored `mapbox://` and `maptiler://` URLs reach a real server through a rule,
    /// as MapLibre's URL-transform delegate does; everything handed back is canonical again.
    @Test func aNonHTTPPrefixIsRewrittenToAServerAndBack() {
        let schemes = UpstreamRules([
            UpstreamRule(prefix: "mapbox://", queryItems: [.init("access_token", "pk.secret-token")],
                         rewrittenPrefix: "https://api.mapbox.example/"),
            UpstreamRule(prefix: "maptiler://maps/", rewrittenPrefix: "http://127.0.0.1:8080/maps/"),
        ])
        let wire = schemes.wire(for: "mapbox://styles/mapbox/streets-v11")
        #expect(wire.url == "https://api.mapbox.example/styles/mapbox/streets-v11?access_token=pk.secret-token")
        #expect(schemes.canonical(forWire: wire.url) == "mapbox://styles/mapbox/streets-v11")
        #expect(schemes.wire(for: "maptiler://maps/basic/style.json").url == "http://127.0.0.1:8080/maps/basic/style.json")
        #expect(schemes.canonical(forWire: "http://127.0.0.1:8080/maps/basic/style.json") == "maptiler://maps/basic/style.json")
    }
}
