import Fetch
import Foundation
import PackdTestSupport
import Testing

/// The adaptive per-host limit against real sockets: upstreams that refuse or slow down under
/// concurrency (they count it themselves), explicit caps, and what an owner (a pack) can read.
@Suite struct AdaptiveConcurrencyTests {
    /// An upstream serving at most `allowed` requests at once, answering 429 (no Retry-After)
    /// above: the limit falls below it and stays, and the 429s are few.
    @Test func convergesBelowAnUpstreamsConcurrencyLimitWithFew429s() throws {
        let allowed = 12
        let upstream = try TestUpstream { request in
            request.concurrent > allowed ? .respond(status: 429)
                : .delayed(.milliseconds(10), .respond(status: 200, body: [1, 2, 3]))
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let count = 2500
        let results = try harness.fetchAll((0..<count).map { FetchRequest(url: upstream.url("/t/\($0)")) })
        let refused = results.count { $0.response?.status == 429 }
        #expect(results.allSatisfy { $0.response?.status == 200 || $0.response?.status == 429 })
        let status = try #require(try harness.thread.sync { harness.fetcher.hostStatus(of: upstream.url("/")) })
        let late = upstream.requests.suffix(count / 2)
        let lateAbove = late.count { $0.concurrent > allowed }
        print("""
            upstream allowing \(allowed) at once: \(refused) of \(count) requests answered 429 \
            (\(lateAbove) of the last \(late.count) arrived above \(allowed)); limit now \(status.limit)
            """)
        // The slow start overshoots once (8 → 16); after that a 429 only per probe of the level above.
        #expect(refused <= count / 50, "\(refused) × 429")
        #expect(lateAbove <= late.count / 100)
        #expect(status.limit <= allowed + 1)
        #expect(status.limit >= allowed / 2)
    }

    /// An upstream that works `workers` requests at a time (30 ms each) and queues the rest:
    /// latency grows with concurrency above them while throughput does not. The limit settles a
    /// little above the knee, far from the HTTP/1.1 ceiling of 128.
    @Test func settlesNearTheThroughputKneeOfASlowingUpstream() throws {
        let workers = 16
        let upstream = try TestUpstream { request in
            .delayed(.milliseconds(30) * max(1, Double(request.concurrent) / Double(workers)),
                     .respond(status: 200, body: [1, 2, 3]))
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let count = 3000
        let results = try harness.fetchAll((0..<count).map { FetchRequest(url: upstream.url("/t/\($0)")) })
        #expect(results.allSatisfy { $0.response?.status == 200 })
        let status = try #require(try harness.thread.sync { harness.fetcher.hostStatus(of: upstream.url("/")) })
        let late = upstream.requests.suffix(count / 2).map(\.concurrent).sorted()
        let median = late[late.count / 2]
        print("""
            upstream with \(workers) workers: limit \(status.limit), median concurrency of the last \(late.count) \
            requests \(median), latency \(status.latency.map { "\($0)" } ?? "?") (baseline \(status.baseline.map { "\($0)" } ?? "?"))
            """)
        #expect(median >= workers * 3 / 4 && median <= workers * 5 / 2, "median concurrency \(median)")
        #expect(status.limit >= workers / 2 && status.limit <= workers * 5 / 2, "limit \(status.limit)")
    }

    /// A rule's `max_transfers` holds whatever the limiter would learn (the upstream counts).
    @Test func ruleCapIsNeverExceededAndAFixedLimitDoesNotMove() throws {
        let upstream = try TestUpstream { _ in .delayed(.milliseconds(2), .respond(status: 200, body: [7])) }
        defer { upstream.stop() }
        let other = try TestUpstream { _ in .respond(status: 200, body: [8]) }
        defer { other.stop() }
        let rules = [UpstreamRule(prefix: upstream.url("/"), policy: HostPolicy(maxTransfers: 2)),
                     // A credentials rule on a longer prefix keeps the shorter prefix's cap.
                     UpstreamRule(prefix: upstream.url("/private/"), headers: [.init("X-Key", "k1")]),
                     UpstreamRule(prefix: other.url("/"), policy: HostPolicy(maxTransfers: 5, adaptive: false))]
        let harness = try FetchHarness(FetchConfiguration(addressPolicy: .loopbackForTests, rules: rules))
        defer { harness.close() }
        let requests = (0..<300).map { FetchRequest(url: upstream.url($0 % 2 == 0 ? "/t/\($0)" : "/private/\($0)")) }
            + (0..<50).map { FetchRequest(url: other.url("/o/\($0)")) }
        let results = try harness.fetchAll(requests)
        #expect(results.allSatisfy { $0.response?.status == 200 })
        #expect(upstream.maxConcurrentRequests == 2)
        #expect(upstream.connectionsAccepted <= 2)
        let statuses = try harness.thread.sync { harness.fetcher.hostStatuses() }
        let capped = try #require(statuses.first { $0.host == "127.0.0.1:\(upstream.port)" })
        let fixed = try #require(statuses.first { $0.host == "127.0.0.1:\(other.port)" })
        // Adaptive below the cap (a loaded machine's latency may take it to 1 by the end).
        #expect(capped.limit <= 2 && capped.adaptive)
        #expect(fixed.limit == 5 && !fixed.adaptive)
    }

    /// What a pack reads about itself: its transfers on the wire, and why a host it uses holds
    /// it back — a Retry-After pause (with its end) or the limiter backing off after a 429.
    @Test func ownerSeesItsTransfersInFlightAndItsHostsThrottle() throws {
        let hanging = try TestUpstream { _ in .hang }
        defer { hanging.stop() }
        let refusing = try TestUpstream { _ in .respond(status: 429) }
        defer { refusing.stop() }
        let harness = try FetchHarness(FetchConfiguration(maxTransfersPerHost: 3, addressPolicy: .loopbackForTests))
        defer { harness.close() }
        let results = ResultBox(count: 5)
        try harness.thread.sync {
            for index in 0..<5 {
                harness.fetcher.submit(FetchRequest(url: hanging.url("/\(index)"), owner: 7)) { results.set(index, $0) }
            }
        }
        #expect(eventually { hanging.requests.count == 3 })
        #expect(try harness.thread.sync { harness.fetcher.transfersInFlight(owner: 7) } == 3)
        #expect(try harness.thread.sync { harness.fetcher.transfersInFlight(owner: 8) } == 0)
        #expect(try harness.thread.sync { harness.fetcher.throttle(owner: 7) } == nil)

        let until = ContinuousClock.now + .seconds(30)
        let paused = try harness.thread.sync {
            harness.fetcher.pauseHost(of: hanging.url("/x"), until: until)
            return (harness.fetcher.throttle(owner: 7), harness.fetcher.throttle(owner: 8))
        }
        #expect(paused.0 == HostThrottle(host: "127.0.0.1:\(hanging.port)", reason: .retryAfter, until: until))
        #expect(paused.1 == nil)

        let refused = try harness.thread.sync { () -> ResultBox in
            let box = ResultBox(count: 1)
            harness.fetcher.submit(FetchRequest(url: refusing.url("/r"), owner: 9)) { box.set(0, $0) }
            return box
        }
        #expect(refused.wait(deadline: .seconds(30)))
        #expect(refused.values[0].response?.status == 429)
        let backingOff = try harness.thread.sync { harness.fetcher.throttle(owner: 9) }
        #expect(backingOff == HostThrottle(host: "127.0.0.1:\(refusing.port)", reason: .rateLimited, until: nil))

        // Cancelling an owner forgets its hosts and frees its transfers.
        try harness.thread.sync {
            harness.fetcher.cancelAll(owner: 9)
            harness.fetcher.cancelAll(owner: 7)
        }
        #expect(results.wait(deadline: .seconds(30)))
        #expect(results.values.allSatisfy { $0.error == .cancelled })
        #expect(try harness.thread.sync { harness.fetcher.throttle(owner: 9) } == nil)
        #expect(try harness.thread.sync { harness.fetcher.transfersInFlight(owner: 7) } == 0)
    }

    /// `caFile` adds a private CA: the HTTPS upstream it signed is reached with it and refused
    /// (tls_failed) without it.
    @Test func addedCertificateAuthorityIsTrustedAndOnlyWithIt() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try TestCertificateAuthority(directory: directory)
        try Data("tile bytes".utf8).write(to: directory.appendingPathComponent("tile.pbf"))
        let server = try TLSFileServer(directory: directory, authority: authority)
        defer { server.stop() }

        let trusting = try FetchHarness(FetchConfiguration(addressPolicy: .loopbackForTests, caFile: authority.certificatePath))
        defer { trusting.close() }
        let response = try #require(try trusting.fetch(FetchRequest(url: server.url("/tile.pbf"))).response)
        #expect(response.status == 200)
        #expect(response.body == Array("tile bytes".utf8))

        let plain = try FetchHarness()
        defer { plain.close() }
        #expect(try plain.fetch(FetchRequest(url: server.url("/tile.pbf"))).error == .tls)
    }
}
