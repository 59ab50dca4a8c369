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
        // What the packs' progress events say of their transfers, read as they come (a stream
        // left unread would have its progress events coalesced).
        nonisolated(unsafe) let stream = try server.events("/v1/events")
        let seen = SeenTransfers()
        let reader = Thread {
            while let event = try? stream.nextEvent() {
                let data = APIProof.data(event)
                guard event.type == "progress", let packID = data["pack_id"] as? Int,
                      let progress = data["progress"] as? [String: Any] else { continue }
                seen.record(packID, inFlight: progress["transfers_in_flight"] as? Int ?? -1,
                            reason: (progress["throttled"] as? [String: Any])?["reason"] as? String)
            }
        }
        reader.start()
        defer { shutdown(stream.fd, Int32(SHUT_RDWR)) }

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

        // The refusals showed in the refused pack's progress as `rate_limited`; the capped pack
        // was never held back and never had more than its two transfers in flight.
        #expect(eventually(within: 10) { seen.reasons(packs[1]).contains("rate_limited") }, "\(seen.reasons(packs[1]))")
        #expect(seen.reasons(packs[0]).isEmpty, "\(seen.reasons(packs[0]))")
        #expect(seen.inFlight(packs[0]).max() ?? 0 <= 2 && seen.inFlight(packs[0]).min() ?? -1 >= 0, "\(seen.inFlight(packs[0]))")
        #expect(seen.inFlight(packs[0]).contains { $0 > 0 })
    }
}

/// `transfers_in_flight` and `throttled.reason` of each pack's progress events.
private final class SeenTransfers: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [Int: [Int]] = [:]
    private var throttles: [Int: Set<String>] = [:]

    func record(_ packID: Int, inFlight: Int, reason: String?) {
        lock.withLock {
            counts[packID, default: []].append(inFlight)
            if let reason { throttles[packID, default: []].insert(reason) }
        }
    }

    func inFlight(_ packID: Int) -> [Int] { lock.withLock { counts[packID] ?? [] } }
    func reasons(_ packID: Int) -> Set<String> { lock.withLock { throttles[packID] ?? [] } }
}
