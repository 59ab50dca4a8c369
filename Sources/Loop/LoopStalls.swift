import CUV
import Synchronization

/// How long the loop's turns kept it from polling: the histogram behind
/// `packd_loop_stall_seconds`. Pure.
///
/// A sample is one turn's *busy* time: from one moment the loop was about to wait for I/O to the
/// next, less the time it then spent waiting in the kernel (libuv's idle-time metric). That is
/// every callback the turn ran — I/O, timers, `execute` work, thread-pool completions, close
/// callbacks — i.e. how late a request, a curl socket or a timer that became ready at the start of
/// the turn was seen. A turn that handles many ready sockets is long because of all of them
/// together; one slow callback is long on its own. Either way nothing else ran meanwhile.
public struct LoopStallHistogram: Sendable, Equatable {
    /// Upper bounds in seconds (`le`), ascending; a last bucket `+Inf` is implied.
    public static let bounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
    ]
    private static let boundNanoseconds: [UInt64] = bounds.map { UInt64(($0 * 1e9).rounded()) }

    /// Per bound, the samples at or under it (not cumulative; `cumulative` is); the last slot
    /// counts those over every bound.
    public private(set) var buckets: [UInt64] = Array(repeating: 0, count: bounds.count + 1)
    public private(set) var count: UInt64 = 0
    public private(set) var sumNanoseconds: UInt64 = 0
    /// The longest sample so far.
    public private(set) var maxNanoseconds: UInt64 = 0

    public init() {}

    public mutating func record(nanoseconds: UInt64) {
        var index = 0
        while index < Self.boundNanoseconds.count && nanoseconds > Self.boundNanoseconds[index] { index += 1 }
        buckets[index] &+= 1
        count &+= 1
        sumNanoseconds &+= nanoseconds
        maxNanoseconds = max(maxNanoseconds, nanoseconds)
    }

    /// Samples at or under each bound, then the total (`+Inf`): Prometheus' `_bucket` series.
    public var cumulative: [UInt64] {
        var running: UInt64 = 0
        return buckets.map { running &+= $0; return running }
    }

    public var sumSeconds: Double { Double(sumNanoseconds) / 1e9 }
}

/// Measures every turn of one loop into a `LoopStallHistogram` (see there for what a sample is),
/// with a uv prepare handle — prepare callbacks run once a turn, just before the loop polls —
/// and libuv's idle-time metric, switched on for the loop.
///
/// The histogram is recorded on the loop thread and read from any thread (`snapshot`) under a
/// mutex held for a few increments. The handle does not keep the loop alive.
final class LoopStallMeter: LoopHandleOwner, Sendable {
    private let histogram = Mutex(LoopStallHistogram())
    /// Loop thread only: `uv_hrtime` and `uv_metrics_idle_time` at the last prepare.
    private nonisolated(unsafe) var lastTurn: (at: UInt64, idle: UInt64)?

    init(loop: UnsafeMutablePointer<uv_loop_t>) throws {
        try UVError.check(packd_uv_loop_measure_idle_time(loop), "uv_loop_configure(UV_METRICS_IDLE_TIME)")
        let handle = allocateHandle(uv_prepare_t.self, owner: self)
        try UVError.check(uv_prepare_init(loop, handle), "uv_prepare_init")
        uv_prepare_start(handle) { handle in
            guard let handle else { return }
            handleOwner(handle, as: LoopStallMeter.self).turnEnded(handle.pointee.loop)
        }
        uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
    }

    private func turnEnded(_ loop: UnsafeMutablePointer<uv_loop_t>?) {
        guard let loop else { return }
        let now = uv_hrtime(), idle = uv_metrics_idle_time(loop)
        defer { lastTurn = (now, idle) }
        guard let last = lastTurn, now >= last.at else { return }
        let waited = idle >= last.idle ? idle - last.idle : 0
        let busy = now - last.at
        let stall = busy > waited ? busy - waited : 0
        histogram.withLock { $0.record(nanoseconds: stall) }
    }

    func snapshot() -> LoopStallHistogram {
        histogram.withLock { $0 }
    }
}
