import Foundation
import PackdTestSupport
import Testing

/// `/metrics` of a real `packd serve` after a real download: the counters fed by Fetch, Jobs and
/// the writer moved by exactly what happened upstream.
@Suite struct ServeMetricsTests {
    @Test func countersMoveByWhatTheDownloadDid() throws {
        // Every seventh upstream request answers 500: each is an upstream error and a retry.
        let upstream = try MapUpstream(faults: .init(failEvery: 7))
        defer { upstream.stop() }
        let server = try PackdServer()
        var stopped = false
        defer { if !stopped { _ = server.remove() } }

        let created = try server.exchange("POST", "/v1/packs", json: ["region": PackDownloadTests.region(upstream, maxZoom: 4)])
        #expect(created.status == 201)
        let packID = try #require(try created.decodedJSON()["id"] as? Int)
        let pack = server.waitForEnd(packID)
        #expect(pack["state"] as? String == "complete", "\(pack)")

        let scraped = try server.exchange("GET", "/metrics")
        #expect(scraped.status == 200)
        let metrics = Self.samples(String(decoding: scraped.body, as: UTF8.self))
        let requests = upstream.requests
        let failed = requests.count / 7
        #expect(failed > 0)
        // Bytes received: the pack completed, so every requested path was answered exactly once
        // with its body as sent (gzip where the upstream gzipped; 404s and the 500s are empty).
        let sent = Set(requests.map(\.target)).reduce(0) { $0 + Self.servedBytes(upstream, $1) }
        let planned = try PackDownloadTests.planned(upstream, maxZoom: 4).count
        #expect(metrics["packd_downloaded_resources_total"] == Double(planned))
        #expect(metrics["packd_downloaded_bytes_total"] == Double(sent))
        #expect(metrics[#"packd_upstream_errors_total{kind="http"}"#] == Double(failed))
        #expect(metrics["packd_upstream_retries_total"] == Double(failed))
        #expect(metrics[#"packd_upstream_errors_total{kind="timeout"}"#] == 0)
        #expect(metrics["packd_active_transfers"] == 0)
        #expect((metrics["packd_writer_batch_duration_seconds_count"] ?? 0) >= 1)
        #expect(metrics[#"packd_packs{state="complete"}"#] == 1)
        #expect(metrics[#"packd_http_requests_total{route="/v1/packs",method="POST",status="201"}"#] == 1)

        // Each of those 500s is a `resource_error` event (retried), replayed from the event log.
        let stream = try StreamClient(port: server.port)
        try stream.get("/v1/packs/\(packID)/events", headers: ["Last-Event-ID": "0"])
        #expect(stream.status == 200)
        let events = try stream.events { $0.type == "state" && $0.data.contains(#""state":"complete""#) }
        let resourceErrors = try events.filter { $0.type == "resource_error" }.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.data.utf8)) as? [String: Any])
        }
        #expect(resourceErrors.count == failed)
        #expect(resourceErrors.allSatisfy {
            // A retry can land on a seventh request too: attempts stay below the 5 allowed.
            $0["status"] as? Int == 500 && $0["will_retry"] as? Bool == true && (1...4).contains($0["attempt"] as? Int ?? 0)
                && ($0["url"] as? String)?.hasPrefix(upstream.base) == true && $0["error"] is NSNull
        })
        stopped = true
        #expect(server.remove() == 0)
    }

    /// The bytes MapUpstream puts on the wire for `path` (its body, gzipped for every third tile).
    static func servedBytes(_ upstream: MapUpstream, _ path: String) -> Int {
        guard let body = upstream.body(for: path) else { return 0 }
        return path.hasPrefix("/tiles/") && MapUpstream.hash(path) % 3 == 0 ? gzip(body).count : body.count
    }

    /// `name{labels} value` lines of a Prometheus exposition.
    static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}
