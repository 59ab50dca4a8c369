import CUV
import Glibc

/// Delivers a POSIX signal (SIGTERM, SIGINT) to the loop thread as an ordinary callback, so a
/// graceful shutdown can run with the same single-threaded rules as everything else. Made and
/// closed on the loop thread (checked in debug builds).
public final class SignalWatcher: LoopHandleOwner {
    private let loop: EventLoop
    private var handle: UnsafeMutablePointer<uv_signal_t>?
    private var callback: ((Int32) -> Void)?

    public init(loop: EventLoop, signal: Int32, _ callback: @escaping (Int32) -> Void) throws {
        loop.assertInLoopThread()
        self.loop = loop
        self.callback = callback
        let handle = allocateHandle(uv_signal_t.self, owner: self)
        uv_signal_init(loop.raw, handle)
        self.handle = handle
        let status = uv_signal_start(handle, { watcher, signum in
            handleOwner(watcher, as: SignalWatcher.self).callback?(signum)
        }, signal)
        if status < 0 {
            close()
            throw UVError(status, "uv_signal_start")
        }
    }

    /// Keeps the watcher from holding the loop open on its own.
    public func unref() {
        loop.assertInLoopThread()
        guard let handle else { return }
        uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
    }

    public func close() {
        loop.assertInLoopThread()
        guard let handle else { return }
        self.handle = nil
        uv_signal_stop(handle)
        closeHandle(handle)
    }

    public func handleDidClose() { callback = nil }

    /// Writing to a closed socket must be an error return, not a process kill.
    public static func ignoreSIGPIPE() {
        _ = Glibc.signal(SIGPIPE, SIG_IGN)
    }
}
