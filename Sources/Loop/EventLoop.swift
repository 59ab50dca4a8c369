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
    private var wakeup: UnsafeMutablePointer<uv_async_t>?
    private var thread: pthread_t?
    private var closed = false

    public init() throws {
        raw = .allocate(capacity: 1)
        let status = uv_loop_init(raw)
        if status < 0 {
            raw.deallocate()
            throw UVError(status, "uv_loop_init")
        }
        let async = allocateHandle(uv_async_t.self, owner: inbox)
        try UVError.check(uv_async_init(raw, async) { handle in
            handleOwner(handle, as: Inbox.self).drain()
        }, "uv_async_init")
        // The inbox must not keep the loop alive by itself: `run()` returns once real work is gone.
        uv_unref(UnsafeMutableRawPointer(async).assumingMemoryBound(to: uv_handle_t.self))
        wakeup = async
    }

    /// Whether the caller is on the thread currently running this loop.
    public var inLoopThread: Bool {
        guard let thread else { return false }
        return pthread_equal(thread, pthread_self()) != 0
    }

    /// Runs the loop on the calling thread until `stop()` or until no referenced handle is left.
    public func run() {
        thread = pthread_self()
        uv_run(raw, UV_RUN_DEFAULT)
    }

    /// Makes `run()` return after the current iteration. Loop thread only; use `execute` elsewhere.
    public func stop() {
        uv_stop(raw)
    }

    /// Runs `work` on the loop thread soon. Safe from any thread, including the loop thread itself
    /// (the work then runs on a later iteration, never re-entrantly).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        guard inbox.append(work), let wakeup else { return }
        uv_async_send(wakeup)
    }

    /// Closes every handle still open, runs their close callbacks and releases the loop.
    /// Call after `run()` has returned, on the thread that ran it.
    public func close() {
        guard !closed else { return }
        closed = true
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
        wakeup = nil
        if uv_loop_close(raw) == 0 {
            raw.deallocate()
        }
        // A loop that refuses to close still has handles libuv owns; leaking its memory is safer
        // than freeing memory a handle points into.
    }

    /// The queue `execute` fills from any thread; drained on the loop thread by the async handle.
    final class Inbox: LoopHandleOwner, @unchecked Sendable {
        private let lock = NSLock()
        private var pending: [@Sendable () -> Void] = []
        private var sealed = false

        func append(_ work: @escaping @Sendable () -> Void) -> Bool {
            lock.lock()
            defer { lock.unlock() }
            if sealed { return false }
            pending.append(work)
            return true
        }

        func seal() {
            lock.lock()
            sealed = true
            lock.unlock()
            drain()
        }

        func drain() {
            while true {
                lock.lock()
                let batch = pending
                pending.removeAll(keepingCapacity: true)
                lock.unlock()
                if batch.isEmpty { return }
                for work in batch { work() }
            }
        }
    }
}
