import CUV

/// Runs a callback once on a later turn of the loop — "as soon as possible, but not before the
/// loop has had a chance to poll its sockets" — through a uv idle handle stopped when it fires.
///
/// A zero-delay `LoopTimer` is not that: a timer started from a timer callback is already due and
/// runs in the same timer pass. Work that reschedules itself that way (curl asking for a zero
/// timeout after every transfer it finishes and starts) keeps the loop inside one turn for tens of
/// milliseconds while requests wait unread. An idle handle runs at most once per turn, and each
/// turn polls I/O; while one is pending the poll does not block.
///
/// Loop thread only (checked in debug builds). Call `close()` when done.
public final class NextTurn: LoopHandleOwner {
    private let loop: EventLoop
    private var handle: UnsafeMutablePointer<uv_idle_t>?
    private var callback: (() -> Void)?

    public init(loop: EventLoop) {
        loop.assertInLoopThread()
        self.loop = loop
        let handle = allocateHandle(uv_idle_t.self, owner: self)
        uv_idle_init(loop.raw, handle)
        self.handle = handle
    }

    /// Whether a callback is waiting for the next turn.
    public var isScheduled: Bool {
        loop.assertInLoopThread()
        guard let handle else { return false }
        return uv_is_active(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) != 0
    }

    /// Runs `callback` on the next turn, replacing one scheduled before and not yet run.
    public func schedule(_ callback: @escaping () -> Void) {
        loop.assertInLoopThread()
        guard let handle else { return }
        self.callback = callback
        uv_idle_start(handle) { idle in
            let owner = handleOwner(idle, as: NextTurn.self)
            uv_idle_stop(idle)
            let callback = owner.callback
            owner.callback = nil
            callback?()
        }
    }

    public func cancel() {
        loop.assertInLoopThread()
        guard let handle else { return }
        uv_idle_stop(handle)
        callback = nil
    }

    public func close() {
        loop.assertInLoopThread()
        guard let handle else { return }
        uv_idle_stop(handle)
        self.handle = nil
        closeHandle(handle)
    }

    public func handleDidClose() { callback = nil }
}
