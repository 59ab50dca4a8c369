import Foundation
import PackdTestSupport
import Testing

/// `packd_loop_stall_seconds` on a real `packd serve`'s `/metrics`: a histogram of its loop's
/// turns (counted from the first turn, so already non-empty by the first scrape), and the
/// longest turn as a gauge.
@Suite struct LoopStallMetricsTests {
    @Test func metricsShowTheLoopStallHistogram() throws {
        let server = try PackdServer()
        defer { server.remove() }
        let first = try server.send("GET", "/metrics").body
        let lines = first.split(separator: "\n").map(String.init)
        #expect(lines.contains("# TYPE packd_loop_stall_seconds histogram"))
        #expect(lines.contains("# TYPE packd_loop_stall_max_seconds gauge"))
        let buckets = lines.filter { $0.hasPrefix("packd_loop_stall_seconds_bucket{le=") }
        #expect(buckets.count == 17, "\(buckets)")
        #expect(buckets.first?.hasPrefix(#"packd_loop_stall_seconds_bucket{le="0.0001"} "#) == true)
        #expect(buckets.contains { $0.hasPrefix(#"packd_loop_stall_seconds_bucket{le="0.005"} "#) })
        let counts = buckets.compactMap { $0.split(separator: " ").last.flatMap { UInt64($0) } }
        #expect(counts.count == buckets.count && zip(counts, counts.dropFirst()).allSatisfy { $0 <= $1 }, "not cumulative: \(buckets)")
        let total = try #require(value(lines, "packd_loop_stall_seconds_count"))
        #expect(total > 0 && UInt64(total) == counts.last, "count \(total), +Inf \(counts.last ?? 0)")
        #expect(try #require(value(lines, "packd_loop_stall_seconds_sum")) > 0)
        #expect(try #require(value(lines, "packd_loop_stall_max_seconds")) > 0)
        // The loop keeps turning: a later scrape has counted more turns.
        let later = try #require(try server.metric("packd_loop_stall_seconds_count"))
        #expect(later > total)
    }

    private func value(_ lines: [String], _ name: String) -> Double? {
        lines.first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }
}
