import CUV
import Foundation

/// One libuv loop and the thread that runs it.
///
/// Everything packd does on the network — accepting connections, curl transfers, timers,
/// server-sent events — happens on this one thread, so none of it needs locks. Other threads
/// (the SQLite writer, tests) hand work to it with `execute`, the only thread-safe entry point.
public final class EventLoop: @unchecked Sendable {
    /// The uv loop. Touch it only on the loop thread.
    public let raw: UnsafeMutablePointer<uv_loop_t>

    private let inbox = Inbox()
    private let stallMeter: LoopStallMeter
    /// The loop's thread: the one that made it until `run()`, then the one running it. Written
    /// before any other thread can ask (`LoopThread` waits for the loop to run), read anywhere.
    private var thread: pthread_t
    private var closed = false

    public init() throws {
        thread = pthread_self()
        raw = .allocate(capacity: 1)
        let status = uv_loop_init(raw)
        if status < 0 {
            raw.deallocate()
            throw UVError(status, "uv_loop_init")
        }
        let async = allocateHandle(uv_async_t.self, owner: inbox)
        try UVError.check(uv_async_init(raw, async) { handle in
            handleOwner(handle, as: Inbox.self).runQueued()
        }, "uv_async_init")
        // The inbox must not keep the loop alive by itself: `run()` returns once real work is gone.
        uv_unref(UnsafeMutableRawPointer(async).assumingMemoryBound(to: uv_handle_t.self))
        inbox.open(wakeup: async)
        stallMeter = try LoopStallMeter(loop: raw)
    }

    /// How long each turn of this loop ran callbacks before it could poll again, since it was
    /// made (`LoopStallHistogram`): `packd_loop_stall_seconds`. Safe from any thread.
    public var stalls: LoopStallHistogram {
        stallMeter.snapshot()
    }

    /// Whether the caller is on this loop's thread: the one running it, or, before it runs (while
    /// a server and its parts are built) and after (while it closes), the one that made it.
    public var inLoopThread: Bool {
        pthread_equal(thread, pthread_self()) != 0
    }

    /// Stops a debug build when called off this loop's thread, as swift-nio's
    /// `assertInEventLoop` and `NIOLoopBound` do: loop objects (connections, transfers, the
    /// scheduler, subscribers) are touched on the loop thread only and take no locks, so a touch
    /// from another thread is a data race — caught here at the call, not as a corrupted state
    /// later. Inlined and compiled out in release builds, so it costs nothing there.
    @inlinable
    public func assertInLoopThread(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoopThread, "a loop-bound object was touched off its loop thread", file: file, line: line)
    }

    /// Runs the loop on the calling thread until `stop()` or until no referenced handle is left.
    public func run() {
        thread = pthread_self()
        uv_run(raw, UV_RUN_DEFAULT)
    }

    /// Makes `run()` return after the current iteration. Loop thread only; use `execute` elsewhere.
    public func stop() {
        assertInLoopThread()
        uv_stop(raw)
    }

    /// Runs `work` on the loop thread soon. Safe from any thread, including the loop thread itself
    /// (the work then runs on a later iteration, never re-entrantly), and at any time: once
    /// `close()` has begun, `work` is refused (dropped, `false`) instead of signalling a handle
    /// that is being freed.
    @discardableResult
    public func execute(_ work: @escaping @Sendable () -> Void) -> Bool {
        inbox.append(work)
    }

    /// Closes every handle still open, runs their close callbacks and releases the loop.
    /// Call after `run()` has returned, on the thread that ran it (a loop that never ran: on the
    /// thread that made it, e.g. when starting up failed).
    public func close() {
        assertInLoopThread()
        guard !closed else { return }
        closed = true
        // After `seal` no thread is inside `uv_async_send`, and none will enter it: only now may the
        // async handle be closed and freed with the others.
        inbox.seal()
        uv_walk(raw, { handle, _ in
            guard let handle, uv_is_closing(handle) == 0 else { return }
            if handle.pointee.data != nil {
                closeHandle(handle)
            } else {
                uv_close(handle, nil)
            }
        }, nil)
        uv_run(raw, UV_RUN_DEFAULT)
        if uv_loop_close(raw) == 0 {
            raw.deallocate()
        }
        // A loop that refuses to close still has handles libuv owns; leaking its memory is safer
        // than freeing memory a handle points into.
    }

    /// The queue `execute` fills from any thread; drained on the loop thread by the async handle.
    ///
    /// The lock guards the async handle as well as the queue: a work item is queued and the handle
    /// signalled under it, and `seal` takes the handle away under it, so the loop can free the
    /// handle after sealing without another thread still holding its address.
    final class Inbox: LoopHandleOwner, @unchecked Sendable {
        private let lock = NSLock()
        private var pending: [@Sendable () -> Void] = []
        private var wakeup: UnsafeMutablePointer<uv_async_t>?

        func open(wakeup: UnsafeMutablePointer<uv_async_t>) {
            lock.lock()
            self.wakeup = wakeup
            lock.unlock()
        }

        /// Queues `work` and wakes the loop; `false` once sealed (or before `open`).
        func append(_ work: @escaping @Sendable () -> Void) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            guard let wakeup else { return false }
            pending.append(work)
            // Thread-safe and non-blocking (an eventfd write at most), so fine under the lock.
            uv_async_send(wakeup)
            return true
        }

        /// Refuses all later work and runs what is queued. Loop thread only.
        func seal() {
            lock.lock()
            wakeup = nil
            lock.unlock()
            while runQueued() {}
        }

        /// Runs the work queued so far, not what arrives meanwhile: that was signalled again and
        /// runs on the next turn, so threads that keep executing cannot hold the loop in here.
        /// Whether there was any. Loop thread only.
        @discardableResult
        func runQueued() -> Bool {
            lock.lock()
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            lock.unlock()
            for work in batch { work() }
            return !batch.isEmpty
        }
    }
}
