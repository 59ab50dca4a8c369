import Foundation

/// An `EventLoop` running on a thread of its own, for tests and tools that need the loop in the
/// background. The server executable runs its loop on the main thread instead.
public final class LoopThread: @unchecked Sendable {
    public let loop: EventLoop
    private let finished = DispatchSemaphore(value: 0)
    private let keepAlive: LoopTimer?
    private let started = DispatchSemaphore(value: 0)

    /// Starts the thread; returns once the loop is running.
    public init(name: String = "packd-loop") throws {
        let loop = try EventLoop()
        self.loop = loop
        // A repeating timer keeps `uv_run` from returning before anything else is registered.
        let timer = LoopTimer(loop: loop)
        timer.start(after: 3_600_000, repeat: 3_600_000) {}
        keepAlive = timer
        let thread = Thread { [loop, finished, started] in
            loop.execute { started.signal() }
            loop.run()
            loop.close()
            finished.signal()
        }
        thread.name = name
        thread.stackSize = 8 << 20
        thread.start()
        started.wait()
    }

    /// Runs `work` on the loop thread and waits for its result.
    public func sync<T>(_ work: @escaping () throws -> T) throws -> T {
        if loop.inLoopThread { return try work() }
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<T, Error>?
        nonisolated(unsafe) let body = work
        loop.execute {
            result = Result { try body() }
            done.signal()
        }
        done.wait()
        return try result!.get()
    }

    /// Stops the loop, closes every handle and joins the thread.
    public func shutdown() {
        let keepAlive = keepAlive
        nonisolated(unsafe) let timer = keepAlive
        loop.execute { [loop] in
            timer?.close()
            loop.stop()
        }
        finished.wait()
    }
}
