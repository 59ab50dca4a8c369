import Foundation
import Loop
import Testing

@Suite struct BlockingWorkTests {
    /// Work runs off the loop thread (so it may block), its result comes back on the loop, and
    /// many requests in flight at once each deliver exactly their own result.
    @Test func workRunsOnThePoolAndResultsReturnToTheLoop() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let results = Collected()
        let done = DispatchSemaphore(value: 0)
        let count = 200
        try thread.sync {
            for index in 0..<count {
                thread.loop.runOnThreadPool({ [loop = thread.loop] in
                    (index: index, onLoop: loop.inLoopThread)
                }, then: { [loop = thread.loop] result in
                    #expect(loop.inLoopThread)
                    #expect(!result.onLoop)
                    results.append(result.index)
                    if results.values.count == count { done.signal() }
                })
            }
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(results.values.sorted() == Array(0..<count))
    }

    /// A blocked pool thread does not block the loop: the loop keeps running other work.
    @Test func blockingWorkDoesNotStallTheLoop() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let executed = DispatchSemaphore(value: 0)
        try thread.sync {
            thread.loop.runOnThreadPool({ release.wait() }, then: { finished.signal() })
        }
        thread.loop.execute { executed.signal() }
        #expect(executed.wait(timeout: .now() + 30) == .success)
        #expect(finished.wait(timeout: .now()) == .timedOut)
        release.signal()
        #expect(finished.wait(timeout: .now() + 30) == .success)
    }
}
