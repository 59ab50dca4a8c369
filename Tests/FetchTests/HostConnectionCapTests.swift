@testable import Fetch
import Testing

/// curl's per-host connection cap: what HTTP/2 hosts' streams need, or a connection per transfer
/// while an HTTP/1.1 (or not yet known) host is busy.
@Suite struct HostConnectionCapTests {
    @Test func http2HostsGetTheirStreamsConnectionsAndASpare() {
        let defaults = FetchConfiguration()
        // The HTTP/2 ceiling of 100 at 25 streams a connection: 4, and a spare.
        #expect(FetchConfiguration.streamsPerConnection == 25)
        #expect(defaults.hostConnectionCap(onlyHTTP2HostsBusy: true) == 5)
        // An explicit cap above the ceiling needs more connections; below it, the ceiling still rules
        // (another host may use it).
        #expect(FetchConfiguration(maxTransfersPerHost: 300).hostConnectionCap(onlyHTTP2HostsBusy: true) == 13)
        #expect(FetchConfiguration(maxTransfersPerHost: 2).hostConnectionCap(onlyHTTP2HostsBusy: true) == 5)
        let rule = UpstreamRule(prefix: "https://cdn.example/", policy: HostPolicy(maxTransfers: 160))
        #expect(FetchConfiguration(rules: [rule]).hostConnectionCap(onlyHTTP2HostsBusy: true) == 8)
        // Never past the overall cap's needs.
        #expect(FetchConfiguration(maxTransfers: 10).hostConnectionCap(onlyHTTP2HostsBusy: true) == 2)
    }

    @Test func anHTTP1HostBusyGetsAConnectionPerTransfer() {
        #expect(FetchConfiguration().hostConnectionCap(onlyHTTP2HostsBusy: false) == 128)
        #expect(FetchConfiguration(maxTransfersPerHost: 300).hostConnectionCap(onlyHTTP2HostsBusy: false) == 300)
        #expect(FetchConfiguration(maxTransfers: 10).hostConnectionCap(onlyHTTP2HostsBusy: false) == 10)
    }
}
