import Fetch
import Foundation
import Jobs
import PackdTestSupport
import Testing

/// Whole packs against upstreams that push back: one that refuses concurrency above a limit with
/// 429 (the pack still completes, the 429s stay few), and `packd serve` with a rules file holding
/// one host to two transfers (as one would a public server) while another host's 429s are
/// counted in `/metrics`.
@Suite struct AdaptiveDownloadTests {
    static let patient = DownloadSettings(maxInFlight: 128, maxAttempts: 12, initialBackoff: .milliseconds(5),
                                          maxBackoff: .milliseconds(50))

    @Test func packCompletesBelowAnUpstreamsConcurrencyLimitWithFew429s() throws {
        let allowed = 6
        let run = try DownloadRun(faults: .init(tileDelay: .milliseconds(5), concurrencyLimit: allowed), maxZoom: 8,
                                  settings: Self.patient)
        defer { run.close() }
        #expect(run.finish() == ["active", "complete"], "\(run.harness.publishedError(run.packID) ?? "")")
        let tiles = try PackDownloadTests.planned(run.upstream, maxZoom: 8).filter { $0.kind == .tile }.count
        let tileRequests = run.upstream.requests.filter { $0.target.hasPrefix("/tiles/") }
        let refused = run.upstream.counts.overLimit
        let late = tileRequests.suffix(tileRequests.count / 2)
        print("""
            upstream allowing \(allowed) at once: \(tiles) tiles in \(tileRequests.count) requests, \(refused) answered 429 \
            (\(late.count { $0.concurrent > allowed }) of the last \(late.count) arrived above \(allowed))
            """)
        #expect(tiles > 1000)
        // Learning the limit costs a few percent of the first requests (the slow start begins at
        // 8, above the 6 allowed); once learnt, next to none (below).
        #expect(refused <= tileRequests.count / 10, "\(refused) × 429 of \(tileRequests.count)")
        #expect(late.count { $0.concurrent > allowed } <= late.count / 100)
    }

    @Test func servedRulesHoldAHostToTwoTransfersAndMetricsCountAnothersRefusals() throws {
        let capped = try MapUpstream(faults: .init(tileDelay: .milliseconds(2)))
        defer { capped.stop() }
        let refusing = try MapUpstream(faults: .init(tileDelay: .milliseconds(5), concurrencyLimit: 4))
        defer { refusing.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-rules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rules = directory.appendingPathComponent("rules.json")
        try Data(#"{"rules": [{"prefix": "\#(capped.base)/", "max_transfers": 2, "adaptive": false}]}"#.utf8).write(to: rules)
        let server = try PackdServer(arguments: ["--upstream-rules-file", rules.path])
        defer { server.remove() }

        var packs: [Int] = []
        for upstream in [capped, refusing] {
            let created = try server.exchange("POST", "/v1/packs", json: ["region": PackDownloadTests.region(upstream, maxZoom: 6)])
            #expect(created.status == 201)
            packs.append(try #require(try created.decodedJSON()["id"] as? Int))
        }
        for packID in packs {
            let pack = server.waitForEnd(packID)
            #expect(pack["state"] as? String == "complete", "\(pack)")
        }
        #expect(capped.requests.count >= 300)
        #expect(capped.maxConcurrentRequests == 2)

        let metrics = ServeMetricsTests.samples(String(decoding: try server.exchange("GET", "/metrics").body, as: UTF8.self))
        let cappedHost = "127.0.0.1:\(capped.port)"
        let refusingHost = "127.0.0.1:\(refusing.port)"
        #expect(metrics[#"packd_upstream_host_transfer_limit{host="\#(cappedHost)"}"#] == 2)
        #expect(metrics[#"packd_upstream_host_latency_seconds_count{host="\#(cappedHost)"}"#] == Double(capped.requests.count))
        let refusedCount = refusing.counts.overLimit
        print("packd serve: \(refusedCount) × 429 of \(refusing.requests.count) requests from the host allowing 4")
        #expect(refusedCount > 0)
        #expect(metrics[#"packd_upstream_host_throttled_responses_total{host="\#(refusingHost)",status="429"}"#]
                == Double(refusedCount))
        #expect((metrics[#"packd_upstream_host_transfer_limit{host="\#(refusingHost)"}"#] ?? 99) <= 5)
    }
}
