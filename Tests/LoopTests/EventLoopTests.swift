import Foundation
import Loop
import Testing

@Suite struct EventLoopTests {
    @Test func executeRunsWorkOnTheLoopThreadInOrder() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let seen = Collected()
        let done = DispatchSemaphore(value: 0)
        for i in 0..<1000 {
            thread.loop.execute { [loop = thread.loop] in
                #expect(loop.inLoopThread)
                seen.append(i)
                if i == 999 { done.signal() }
            }
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(seen.values == Array(0..<1000))
    }

    @Test func timerFiresAndRepeatsUntilStopped() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let fired = DispatchSemaphore(value: 0)
        let count = Collected()
        let timer = try thread.sync { () -> LoopTimer in
            let timer = LoopTimer(loop: thread.loop)
            timer.start(after: 1, repeat: 1) {
                count.append(1)
                if count.values.count == 5 { timer.stop(); fired.signal() }
            }
            return timer
        }
        #expect(fired.wait(timeout: .now() + 30) == .success)
        try thread.sync { timer.close() }
        #expect(count.values.count == 5)
    }

    @Test func wakeupFromAnotherThreadRunsCallbackOnLoop() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let woke = DispatchSemaphore(value: 0)
        let wakeup = try thread.sync { try LoopWakeup(loop: thread.loop) { woke.signal() } }
        DispatchQueue.global().async { wakeup.signal() }
        #expect(woke.wait(timeout: .now() + 30) == .success)
        try thread.sync { wakeup.close() }
    }

    @Test func signalWatcherDeliversSignalOnLoop() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let got = DispatchSemaphore(value: 0)
        let watcher = try thread.sync { try SignalWatcher(loop: thread.loop, signal: SIGUSR2) { _ in got.signal() } }
        kill(getpid(), SIGUSR2)
        #expect(got.wait(timeout: .now() + 30) == .success)
        try thread.sync { watcher.close() }
    }
}

final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Int] = []
    func append(_ value: Int) { lock.lock(); storage.append(value); lock.unlock() }
    var values: [Int] { lock.lock(); defer { lock.unlock() }; return storage }
}
