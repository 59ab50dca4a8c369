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

    /// The point of `NextTurn`: work that reschedules itself still lets the loop poll between
    /// runs (here: the async handle behind `execute`, drained in the poll phase). A zero timer
    /// started from its own callback runs again in the same timer pass on libuv < 1.45.
    @Test func nextTurnPollsTheLoopBetweenRuns() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let done = DispatchSemaphore(value: 0)
        let polledBetween = Collected()
        try thread.sync {
            let next = NextTurn(loop: thread.loop)
            var runs = 0
            let executed = Collected()
            func run() {
                polledBetween.append(executed.values.count == runs ? 1 : 0)
                runs += 1
                guard runs < 50 else {
                    next.close()
                    done.signal()
                    return
                }
                thread.loop.execute { executed.append(1) }
                next.schedule(run)
            }
            next.schedule(run)
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(polledBetween.values == Array(repeating: 1, count: 50))
    }

    @Test func nextTurnRunsOnlyTheLatestCallbackAndNothingOnceCancelled() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let ran = Collected()
        let done = DispatchSemaphore(value: 0)
        try thread.sync {
            let replaced = NextTurn(loop: thread.loop)
            replaced.schedule { ran.append(1) }
            replaced.schedule { ran.append(2) }
            let cancelled = NextTurn(loop: thread.loop)
            cancelled.schedule { ran.append(3) }
            cancelled.cancel()
            #expect(!cancelled.isScheduled && replaced.isScheduled)
            // Runs after both would have: a timer is due only once the idle callbacks ran.
            let timer = LoopTimer(loop: thread.loop)
            timer.start(after: 5) {
                replaced.close()
                cancelled.close()
                timer.close()
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(ran.values == [2])
    }

    @Test(arguments: [
        (Duration.zero, 0 as UInt64), (.nanoseconds(1), 1), (.microseconds(1500), 2), (.milliseconds(7), 7),
        (.seconds(3), 3000), (.seconds(-2), 0), (.microseconds(-500), 0), (.nanoseconds(-1), 0), (.seconds(1_000_000), 86_400_000),
    ])
    func timerDelaysRoundUpToWholeMillisecondsAndNeverGoNegative(_ delay: Duration, _ expected: UInt64) {
        #expect(LoopTimer.milliseconds(delay) == expected)
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

    /// `execute` from other threads while the loop closes: each item is either run exactly once or
    /// refused (`false`), never lost and never sent to the freed async handle (ThreadSanitizer and
    /// AddressSanitizer flag the latter; `make sanitize`).
    @Test func executeWhileClosingIsRunOrRefusedNeverLost() throws {
        let thread = try LoopThread()
        let accepted = Collected()
        let ran = Collected()
        let senders = DispatchGroup()
        let warmedUp = DispatchSemaphore(value: 0)
        for sender in 0..<3 {
            senders.enter()
            Thread { [loop = thread.loop] in
                defer { senders.leave() }
                var count = 0
                while loop.execute({ ran.append(sender) }) {
                    accepted.append(sender)
                    count += 1
                    if count == 100 { warmedUp.signal() }
                }
            }.start()
        }
        for _ in 0..<3 { #expect(warmedUp.wait(timeout: .now() + 60) == .success) }
        thread.shutdown()
        #expect(senders.wait(timeout: .now() + 60) == .success)
        #expect(!thread.loop.execute {})
        #expect(ran.values.sorted() == accepted.values.sorted())
    }

    @Test func wakeupSignalledWhileClosingIsIgnoredAfterClose() throws {
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let woke = Collected()
        let wakeup = try thread.sync { try LoopWakeup(loop: thread.loop) { woke.append(1) } }
        let signalling = DispatchGroup()
        signalling.enter()
        let stop = Collected()
        let signalled = DispatchSemaphore(value: 0)
        Thread {
            defer { signalling.leave() }
            signalled.signal()
            while stop.values.isEmpty { wakeup.signal() }
        }.start()
        #expect(signalled.wait(timeout: .now() + 60) == .success)
        try thread.sync {}
        try thread.sync { wakeup.close() }
        let seen = woke.values.count
        stop.append(1)
        #expect(signalling.wait(timeout: .now() + 60) == .success)
        try thread.sync {}
        #expect(woke.values.count == seen)
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
