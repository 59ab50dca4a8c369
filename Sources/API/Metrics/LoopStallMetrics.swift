import Loop

/// `packd_loop_stall_seconds` (a histogram) and `packd_loop_stall_max_seconds` (a gauge): how
/// long each turn of the event loop ran callbacks before it could poll for I/O again
/// (`LoopStallHistogram`). Everything packd does on the network waits behind a long turn, so a
/// turn of 5 ms is 5 ms added to every request that arrived during it. Read when `/metrics` is
/// scraped, from the loop's own counters.
struct LoopStallMetrics: Sendable {
    let loop: EventLoop

    func exposition() -> String {
        let histogram = loop.stalls
        let name = "packd_loop_stall_seconds"
        var out = "# HELP \(name) Time each turn of the event loop ran callbacks before it could poll for I/O again.\n"
        out += "# TYPE \(name) histogram\n"
        let cumulative = histogram.cumulative
        for (index, bound) in LoopStallHistogram.bounds.enumerated() {
            out += "\(name)_bucket{le=\"\(bound)\"} \(cumulative[index])\n"
        }
        out += "\(name)_bucket{le=\"+Inf\"} \(histogram.count)\n"
        out += "\(name)_sum \(histogram.sumSeconds)\n"
        out += "\(name)_count \(histogram.count)\n"
        out += "# HELP packd_loop_stall_max_seconds The longest turn of the event loop since packd started.\n"
        out += "# TYPE packd_loop_stall_max_seconds gauge\n"
        out += "packd_loop_stall_max_seconds \(Double(histogram.maxNanoseconds) / 1e9)\n"
        return out
    }
}
