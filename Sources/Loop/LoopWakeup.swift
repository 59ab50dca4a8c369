import CUV
import Foundation

/// A uv async handle: another thread calls `signal()`, the loop thread runs the callback once for
/// one or more signals (libuv coalesces them). The SQLite writer uses one to say "this batch is
/// durable" without the loop ever waiting on disk.
public final class LoopWakeup: LoopHandleOwner, @unchecked Sendable {
    private let loop: EventLoop
    /// Read by `signal()` on any thread and cleared by `close()` on the loop thread, so the lock
    /// keeps a signal from reaching a handle that `close()` has handed to libuv to free.
    private var handle: UnsafeMutablePointer<uv_async_t>?
    private let handleLock = NSLock()
    private var callback: (() -> Void)?

    public init(loop: EventLoop, _ callback: @escaping () -> Void) throws {
        loop.assertInLoopThread()
        self.loop = loop
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
        handleLock.lock()
        self.handle = handle
        handleLock.unlock()
    }

    /// Thread-safe. Wakes the loop; the callback runs on the loop thread. Does nothing once closed.
    public func signal() {
        handleLock.lock()
        defer { handleLock.unlock() }
        guard let handle else { return }
        uv_async_send(handle)
    }

    /// Keeps this handle from holding the loop open on its own. Loop thread only (checked in debug builds).
    public func unref() {
        loop.assertInLoopThread()
        guard let handle = currentHandle() else { return }
        uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
    }

    /// Loop thread only (checked in debug builds). A signal sent after this (from any thread) is ignored.
    public func close() {
        loop.assertInLoopThread()
        handleLock.lock()
        let handle = self.handle
        self.handle = nil
        handleLock.unlock()
        if let handle { closeHandle(handle) }
    }

    private func currentHandle() -> UnsafeMutablePointer<uv_async_t>? {
        handleLock.lock()
        defer { handleLock.unlock() }
        return handle
    }

    public func handleDidClose() { callback = nil }
}
