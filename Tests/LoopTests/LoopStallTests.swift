import Foundation
import Glibc
import Loop
import Testing

@Suite struct LoopStallTests {
    @Test func histogramCountsEachSampleInItsBucketCumulatively() {
        var histogram = LoopStallHistogram()
        for nanoseconds: UInt64 in [0, 100_000, 100_001, 4_000_000, 5_000_000, 5_000_001, 10_000_000_000] {
            histogram.record(nanoseconds: nanoseconds)
        }
        let bounds = LoopStallHistogram.bounds
        let cumulative = histogram.cumulative
        #expect(histogram.count == 7 && cumulative.last == 7)
        // A sample on a bound belongs to that bound's bucket (`le`), one past it to the next.
        #expect(cumulative[bounds.firstIndex(of: 0.0001)!] == 2)
        #expect(cumulative[bounds.firstIndex(of: 0.00025)!] == 3)
        #expect(cumulative[bounds.firstIndex(of: 0.004)!] == 4)
        #expect(cumulative[bounds.firstIndex(of: 0.005)!] == 5)
        #expect(cumulative[bounds.firstIndex(of: 0.01)!] == 6)
        // Past the last bound: only in +Inf.
        #expect(cumulative[bounds.count - 1] == 6)
        #expect(histogram.maxNanoseconds == 10_000_000_000)
        #expect(histogram.sumNanoseconds == 10_014_200_002)
        #expect(zip(cumulative, cumulative.dropFirst()).allSatisfy { $0 <= $1 })
    }

    /// A callback that keeps the loop busy is one long turn; a turn that waits in the kernel for
    /// a timer is not: waiting is not a stall.
    @Test func aBusyCallbackIsMeasuredAndWaitingIsNot() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let loop = thread.loop
        let waited = DispatchSemaphore(value: 0)
        // The loop sits in epoll for a second with nothing to do but this timer.
        try thread.sync {
            let timer = LoopTimer(loop: loop)
            timer.start(after: 1000) {
                timer.close()
                waited.signal()
            }
        }
        #expect(waited.wait(timeout: .now() + 60) == .success)
        #expect(eventually { loop.stalls.count > 0 })
        #expect(loop.stalls.maxNanoseconds < 1_000_000_000, "waiting for the timer counted as a stall: \(loop.stalls)")

        let before = loop.stalls
        loop.execute {
            let start = DispatchTime.now().uptimeNanoseconds
            while DispatchTime.now().uptimeNanoseconds - start < 60_000_000 {}
        }
        // The turn that ran it ends with the next prepare.
        #expect(eventually { loop.stalls.maxNanoseconds >= 60_000_000 })
        let after = loop.stalls
        let overTenMilliseconds = LoopStallHistogram.bounds.firstIndex(of: 0.01)!
        #expect(after.count > before.count)
        #expect(after.count - after.cumulative[overTenMilliseconds] >= 1)
    }
}

/// Polls `condition` on this thread for up to `seconds`.
private func eventually(seconds: Double = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}
