import Foundation
import Loop
import Testing

/// Loop objects are touched on the loop thread only, and a debug build checks it on every touch
/// (as swift-nio's `NIOLoopBound` does): touching one from another thread stops the process at
/// that call, so the test doing it fails, instead of racing. Each case runs in a child process
/// (an exit test) and must die there; the control touches the same objects on the loop and lives.
/// Release builds compile the checks out (`assert`), so these run in debug builds only.
@Suite(.enabled(if: _isDebugAssertConfiguration(), "release builds compile the loop checks out"))
struct LoopBoundCheckTests {
    @Test func aTimerStoppedOffTheLoopStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let thread = try LoopThread()
            let timer = try thread.sync { LoopTimer(loop: thread.loop) }
            timer.stop()
        }
        expectStoppedByTheLoopCheck(result)
    }

    @Test func aLoopBoundValueReadOffTheLoopStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let thread = try LoopThread()
            let bound = try thread.sync { LoopBound([1, 2, 3], loop: thread.loop) }
            _ = bound.value
        }
        expectStoppedByTheLoopCheck(result)
    }

    @Test func poolWorkQueuedOffTheLoopStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let thread = try LoopThread()
            thread.loop.runOnThreadPool({ 1 }, then: { _ in })
        }
        expectStoppedByTheLoopCheck(result)
    }

    /// Died of the check, not of anything else (a throw, another trap).
    private func expectStoppedByTheLoopCheck(_ result: ExitTest.Result?) {
        guard let result else { return }
        #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("touched off its loop thread"))
    }

    /// The control: the same touches on the loop pass, and a value made on another thread (a
    /// result from the thread pool) may be carried to the loop and read there.
    @Test func theSameTouchesOnTheLoopPass() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let done = DispatchSemaphore(value: 0)
        try thread.sync {
            let timer = LoopTimer(loop: thread.loop)
            timer.stop()
            timer.close()
            thread.loop.runOnThreadPool({ LoopBound([1, 2, 3], loop: thread.loop) }, then: { bound in
                #expect(bound.value == [1, 2, 3])
                done.signal()
            })
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
    }
}
