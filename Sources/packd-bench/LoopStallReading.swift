import ArgumentParser
import Foundation

/// `packd_loop_stall_seconds` as read from a running packd's `/metrics`, so a benchmark can say
/// what its loop did during one measured window: the difference of two readings.
struct LoopStallReading {
    /// Cumulative counts per `le` bound, `+Inf` last (as `Double.infinity`).
    let buckets: [(bound: Double, count: Int)]
    let count: Int
    let sumSeconds: Double

    static func read(port: Int) throws -> LoopStallReading {
        let response = try LoopbackHTTPClient.request(port: port, method: "GET", path: "/metrics")
        return try parse(String(decoding: response.body, as: UTF8.self))
    }

    static func parse(_ text: String) throws -> LoopStallReading {
        var buckets: [(Double, Int)] = []
        var count: Int?, sum: Double?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { continue }
            if line.hasPrefix("packd_loop_stall_seconds_bucket{le=\"") {
                let bound = parts[0].dropFirst("packd_loop_stall_seconds_bucket{le=\"".count).dropLast(2)
                guard let value = Int(parts[1]) else { continue }
                buckets.append((bound == "+Inf" ? .infinity : Double(bound) ?? .nan, value))
            } else if parts[0] == "packd_loop_stall_seconds_count" {
                count = Int(parts[1])
            } else if parts[0] == "packd_loop_stall_seconds_sum" {
                sum = Double(parts[1])
            }
        }
        guard let count, let sum, !buckets.isEmpty else { throw ValidationError("no packd_loop_stall_seconds in /metrics") }
        return LoopStallReading(buckets: buckets.map { (bound: $0.0, count: $0.1) }, count: count, sumSeconds: sum)
    }

    /// What happened between `earlier` and this reading.
    func since(_ earlier: LoopStallReading) -> Window {
        let counts = zip(buckets, earlier.buckets).map { (bound: $0.bound, count: $0.count - $1.count) }
        return Window(buckets: counts, turns: count - earlier.count, busySeconds: sumSeconds - earlier.sumSeconds)
    }

    /// Turns of the loop in a window of time.
    struct Window {
        let buckets: [(bound: Double, count: Int)]
        let turns: Int
        let busySeconds: Double

        /// The smallest bound every turn of the window stayed under: the longest turn is at most this.
        var longestAtMost: Double {
            buckets.first { $0.count >= turns }?.bound ?? .infinity
        }

        /// Turns longer than `seconds` (a bucket bound).
        func over(_ seconds: Double) -> Int {
            turns - (buckets.first { $0.bound >= seconds }?.count ?? turns)
        }

        var summary: String {
            let longest = longestAtMost
            let bound = longest.isInfinite ? "> 2.5 s" : String(format: "<= %g ms", longest * 1000)
            return "\(turns) turns, longest \(bound), \(over(0.001)) over 1 ms, \(over(0.005)) over 5 ms"
        }
    }
}
