import CUV

/// A uv timer. Callbacks run on the loop thread, and it is used there only (checked in debug
/// builds). Call `close()` when done: the handle keeps the timer alive until libuv has finished with it.
public final class LoopTimer: LoopHandleOwner {
    private let loop: EventLoop
    private var handle: UnsafeMutablePointer<uv_timer_t>?
    private var callback: (() -> Void)?

    public init(loop: EventLoop) {
        loop.assertInLoopThread()
        self.loop = loop
        let handle = allocateHandle(uv_timer_t.self, owner: self)
        uv_timer_init(loop.raw, handle)
        self.handle = handle
    }

    /// Fires `callback` after `timeout` milliseconds, then every `interval` milliseconds if non-zero.
    /// Starting a running timer restarts it.
    public func start(after timeout: UInt64, repeat interval: UInt64 = 0, _ callback: @escaping () -> Void) {
        loop.assertInLoopThread()
        guard let handle else { return }
        self.callback = callback
        uv_timer_start(handle, { timer in
            handleOwner(timer, as: LoopTimer.self).callback?()
        }, timeout, interval)
    }

    /// Fires `callback` once after `delay`, rounded up to whole milliseconds (at most a day): a
    /// timer that fires a fraction early finds nothing due, and re-armed for 0 ms from its own
    /// callback it runs again in the same timer pass, spinning until the moment comes.
    public func start(after delay: Duration, _ callback: @escaping () -> Void) {
        start(after: Self.milliseconds(delay), callback)
    }

    /// `delay` in whole milliseconds, rounded up, at most a day; 0 for a negative one.
    public static func milliseconds(_ delay: Duration) -> UInt64 {
        // A negative duration can have 0 seconds and negative attoseconds.
        guard delay > .zero else { return 0 }
        let (seconds, attoseconds) = delay.components
        return UInt64(min(seconds, 86_400)) * 1000 + UInt64((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    public func stop() {
        loop.assertInLoopThread()
        guard let handle else { return }
        uv_timer_stop(handle)
    }

    /// Keeps the timer from holding the loop open on its own (for housekeeping timers).
    public func unref() {
        loop.assertInLoopThread()
        guard let handle else { return }
        uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
    }

    public func close() {
        loop.assertInLoopThread()
        guard let handle else { return }
        uv_timer_stop(handle)
        self.handle = nil
        closeHandle(handle)
    }

    public func handleDidClose() { callback = nil }
}
