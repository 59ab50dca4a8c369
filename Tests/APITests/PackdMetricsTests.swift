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
}
