import CUV

/// A uv async handle: another thread calls `signal()`, the loop thread runs the callback once for
/// one or more signals (libuv coalesces them). The SQLite writer uses one to say "this batch is
/// durable" without the loop ever waiting on disk.
public final class LoopWakeup: LoopHandleOwner, @unchecked Sendable {
    private var handle: UnsafeMutablePointer<uv_async_t>?
    private var callback: (() -> Void)?

    public init(loop: EventLoop, _ callback: @escaping () -> Void) throws {
        self.callback = callback
        let handle = allocateHandle(uv_async_t.self, owner: self)
        let status = uv_async_init(loop.raw, handle) { async in
            handleOwner(async, as: LoopWakeup.self).callback?()
        }
        if status < 0 {
            // Never initialised: libuv does not know it, so no close callback will come.
            Unmanaged<LoopWakeup>.fromOpaque(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self).pointee.data!).release()
            handle.deallocate()
            throw UVError(status, "uv_async_init")
        }
        self.handle = handle
    }

    /// Thread-safe. Wakes the loop; the callback runs on the loop thread.
    public func signal() {
        guard let handle else { return }
        uv_async_send(handle)
    }

    /// Keeps this handle from holding the loop open on its own.
    public func unref() {
        guard let handle else { return }
        uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
    }

    /// Loop thread only. No signal may be sent after this.
    public func close() {
        guard let handle else { return }
        self.handle = nil
        closeHandle(handle)
    }

    public func handleDidClose() { callback = nil }
}
