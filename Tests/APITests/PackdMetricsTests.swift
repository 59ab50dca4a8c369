import Foundation
import Glibc
import PackdTestSupport
import Server
import Testing
@testable import API

@Suite struct PackdMetricsTests {
    func lines(_ metrics: PackdMetrics) -> [String] {
        String(decoding: metrics.exposition(), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func exposesEveryInstrumentBeforeAnythingHappens() {
        let text = lines(PackdMetrics())
        // The HTTP families are labelled by route and appear with the first request.
        for family in ["packd_packs gauge",
                       "packd_downloaded_bytes_total counter", "packd_downloaded_resources_total counter",
                       "packd_upstream_errors_total counter", "packd_upstream_retries_total counter",
                       "packd_active_transfers gauge", "packd_sse_subscribers gauge", "packd_writer_batch_duration_seconds histogram"] {
            #expect(text.contains("# TYPE \(family)"), "missing \(family)")
        }
        #expect(text.contains(#"packd_packs{state="active"} 0.0"#))
        #expect(text.contains(#"packd_upstream_errors_total{kind="timeout"} 0"#))
    }

    @Test func recordsRequestsDownloadsAndLatency() {
        let metrics = PackdMetrics()
        metrics.recordRequest(route: "/v1/packs/{id}", method: .get, status: 200, duration: .milliseconds(3))
        metrics.recordRequest(route: "/v1/packs/{id}", method: .get, status: 200, duration: .milliseconds(30))
        metrics.recordRequest(route: "/v1/packs/{id}", method: .get, status: 404, duration: .milliseconds(1))
        metrics.downloadedBytes.increment(by: Int64(1234))
        metrics.sseSubscribers.set(Int64(7))
        metrics.setPacks(state: .active, count: 3)
        metrics.writerBatchLatency.record(.milliseconds(4))
        let text = lines(metrics)
        #expect(text.contains("# TYPE packd_http_requests_total counter"))
        #expect(text.contains("# TYPE packd_http_request_duration_seconds histogram"))
        #expect(text.contains(#"packd_http_requests_total{route="/v1/packs/{id}",method="GET",status="200"} 2"#))
        #expect(text.contains(#"packd_http_requests_total{route="/v1/packs/{id}",method="GET",status="404"} 1"#))
        #expect(text.contains(#"packd_http_request_duration_seconds_count{route="/v1/packs/{id}"} 3"#))
        #expect(text.contains(#"packd_http_request_duration_seconds_bucket{route="/v1/packs/{id}",le="0.005"} 2"#))
        #expect(text.contains(#"packd_http_request_duration_seconds_bucket{route="/v1/packs/{id}",le="+Inf"} 3"#))
        #expect(text.contains("packd_downloaded_bytes_total 1234"))
        #expect(text.contains("packd_sse_subscribers 7.0"))
        #expect(text.contains(#"packd_packs{state="active"} 3.0"#))
        #expect(text.contains("packd_writer_batch_duration_seconds_count 1"))
    }

    @Test func labelValuesFromOutsideAreBoundedAndSanitised() {
        let metrics = PackdMetrics()
        for index in 0..<500 { metrics.recordUpstreamError(kind: "kind-\(index)") }
        metrics.recordUpstreamError(kind: "a\"b\nc")
        let errorLines = lines(metrics).filter { $0.hasPrefix("packd_upstream_errors_total{") }
        #expect(errorLines.count <= PackdMetrics.maxLabelValues + 1)
        #expect(errorLines.contains { $0.hasPrefix(#"packd_upstream_errors_total{kind="other"}"#) })
        #expect(!errorLines.contains { $0.contains("\"b") })
    }

    @Test func instrumentedRoutesCountEveryAnswerIncludingAuthFailures() throws {
        let metrics = PackdMetrics()
        let keys = try APIKeyAuthenticator(parsing: "read:read-key-0123456789", source: "keys")
        let fixture = try APIFixture { router, _ in
            CORSPolicy.disabled.add(.get, "/v1/packs/{id}", to: &router, metrics.instrument("/v1/packs/{id}", keys.guarding(.read) { _, responder in
                responder.respond(.text("ok"))
            }))
        }
        defer { fixture.stop() }
        for authorization in ["Bearer read-key-0123456789", "Bearer read-key-0123456789", "Bearer wrong-key-0123456789"] {
            let client = try StreamClient(port: fixture.port)
            try client.get("/v1/packs/\(Int.random(in: 1...1000))", headers: ["Authorization": authorization])
            _ = try client.readBody()
        }
        let text = lines(metrics)
        #expect(text.contains(#"packd_http_requests_total{route="/v1/packs/{id}",method="GET",status="200"} 2"#))
        #expect(text.contains(#"packd_http_requests_total{route="/v1/packs/{id}",method="GET",status="401"} 1"#))
        #expect(text.contains(#"packd_http_request_duration_seconds_count{route="/v1/packs/{id}"} 3"#))
    }

    @Test func servesTheExpositionOverHTTP() throws {
        let metrics = PackdMetrics()
        metrics.upstreamRetries.increment()
        let fixture = try APIFixture { router, _ in router.get("/metrics", metrics.handler()) }
        defer { fixture.stop() }
        let client = try StreamClient(port: fixture.port)
        try client.get("/metrics")
        #expect(client.status == 200)
        #expect(client.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(try client.readBody().contains("packd_upstream_retries_total 1"))
    }

    /// The one unlabelled sample of `name`.
    private func sample(_ text: [String], _ name: String) -> Double? {
        text.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    @Test func exportsTheBuildAsAGaugeOfOne() {
        let text = lines(PackdMetrics())
        #expect(text.contains("# TYPE packd_build_info gauge"))
        let line = text.first { $0.hasPrefix("packd_build_info{") }
        #expect(line?.contains(#"version="\#(BuildInfo.version)""#) == true)
        #expect(line?.hasSuffix(" 1.0") == true)
    }

    @Test func processMetricsFollowTheProcess() throws {
        let metrics = PackdMetrics()
        let before = lines(metrics)
        for family in ["process_cpu_seconds_total counter", "process_resident_memory_bytes gauge", "process_virtual_memory_bytes gauge",
                       "process_open_fds gauge", "process_max_fds gauge", "process_start_time_seconds gauge"] {
            #expect(before.contains("# TYPE \(family)"), "missing \(family)")
        }
        let resident = try #require(sample(before, "process_resident_memory_bytes"))
        let virtual = try #require(sample(before, "process_virtual_memory_bytes"))
        #expect(resident > 1_000_000 && resident <= virtual)
        let started = try #require(sample(before, "process_start_time_seconds"))
        let now = Date().timeIntervalSince1970
        #expect(started <= now + 1 && started > now - 86_400)

        // Descriptors opened here are counted, and uncounted once closed. Tests running in
        // parallel open and close their own meanwhile: 200 here, and a margin of 50 for theirs.
        let openBefore = try #require(sample(before, "process_open_fds"))
        var pipes: [[Int32]] = []
        for _ in 0..<100 {
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            pipes.append(ends)
        }
        let openDuring = try #require(sample(lines(metrics), "process_open_fds"))
        for ends in pipes { close(ends[0]); close(ends[1]) }
        #expect(openDuring - openBefore >= 150)
        #expect(try #require(sample(lines(metrics), "process_open_fds")) <= openDuring - 150)
        #expect(try #require(sample(before, "process_max_fds")) >= openDuring)

        // CPU time spent here shows up (a busy loop measured by the CPU clock, not a sleep).
        let cpuBefore = try #require(sample(lines(metrics), "process_cpu_seconds_total"))
        var clock = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &clock)
        let start = Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9
        var spin = 0.0
        repeat {
            for index in 0..<10_000 { spin += Double(index).squareRoot() }
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &clock)
        } while Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9 - start < 0.2
        #expect(spin > 0)
        #expect(try #require(sample(lines(metrics), "process_cpu_seconds_total")) - cpuBefore >= 0.15)
    }
}
