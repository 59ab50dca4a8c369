import CUV

/// One `uv_queue_work` request: `work` runs on libuv's thread pool, `then` on the loop thread.
///
/// Follows the ownership rule of `LoopHandle.swift` for requests: the `uv_work_t` is allocated,
/// its `data` slot holds a retained `BlockingWork`, and both are released in the after-work
/// callback, the last moment libuv touches the request.
final class BlockingWork {
    let work: () -> Void
    let then: () -> Void

    init(work: @escaping () -> Void, then: @escaping () -> Void) {
        self.work = work
        self.then = then
    }
}

extension EventLoop {
    /// Runs `work` (which may block: SQLite reads, file I/O) on libuv's thread pool and hands its
    /// result to `then` on the loop thread. Loop thread only (checked in
    /// debug builds). The pool is shared by the whole
    /// process (`UV_THREADPOOL_SIZE`, default 4), so `work` must be bounded.
    public func runOnThreadPool<T: Sendable>(_ work: @escaping @Sendable () -> T, then: @escaping (T) -> Void) {
        assertInLoopThread()
        let slot = PoolResult<T>()
        let request = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)
        UnsafeMutableRawPointer(request).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<uv_work_t>.size)
        let box = BlockingWork(work: { slot.value = work() }, then: { if let value = slot.value { then(value) } })
        request.pointee.data = Unmanaged.passRetained(box).toOpaque()
        let status = uv_queue_work(raw, request, { request in
            guard let data = request?.pointee.data else { return }
            Unmanaged<BlockingWork>.fromOpaque(data).takeUnretainedValue().work()
        }, { request, _ in
            // Runs also for a cancelled request (status UV_ECANCELED); then `slot` is empty.
            guard let request else { return }
            if let data = request.pointee.data {
                let box = Unmanaged<BlockingWork>.fromOpaque(data).takeRetainedValue()
                request.pointee.data = nil
                box.then()
            }
            request.deallocate()
        })
        if status < 0 {
            // Never queued: nothing will call back, so give everything up here and run inline.
            Unmanaged<BlockingWork>.fromOpaque(request.pointee.data!).release()
            request.deallocate()
            then(work())
        }
    }
}

/// A result written on a pool thread and read on the loop thread after libuv's completion
/// barrier (the work callback returns before the after-work callback is queued).
private final class PoolResult<T>: @unchecked Sendable {
    var value: T?
}
