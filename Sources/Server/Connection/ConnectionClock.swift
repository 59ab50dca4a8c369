import CUV
import Loop

/// A connection's one uv timer and the deadlines it serves (`ConnectionDeadlines`): the connection
/// reports what happened through `deadlines`, and `arm`s the timer for a deadline that moved
/// earlier; when it fires, the connection works out what is due (`HTTPConnection.timerFired`).
///
/// The handle holds a retain on the clock, and the clock holds its connection until the handle
/// is closed (the `LoopHandleOwner` rule, as `ConnectionSocket`).
final class ConnectionClock: LoopHandleOwner {
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private let loop: EventLoop
    /// Set by the connection once it is made; let go when the handle has closed.
    var connection: HTTPConnection?
    private var closed = false
    var deadlines: ConnectionDeadlines

    init(loop: EventLoop, limits: ServerLimits) {
        self.loop = loop
        deadlines = ConnectionDeadlines(limits: limits)
        timer = .allocate(capacity: 1)
        UnsafeMutableRawPointer(timer).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<uv_timer_t>.size)
        uv_timer_init(loop.raw, timer)
        // The ownership rule of LoopHandle.swift, by hand: `self` only exists now.
        timer.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// `uv_now`, in milliseconds.
    var now: UInt64 { uv_now(loop.raw) }

    /// Makes sure the timer fires no later than `due` (see `ConnectionDeadlines.arm`).
    func arm(_ due: UInt64) {
        guard !closed, deadlines.arm(due) else { return }
        let current = now
        uv_timer_start(timer, { timer in
            let clock = handleOwner(timer, as: ConnectionClock.self)
            clock.deadlines.timerFired()
            clock.connection?.timerFired()
        }, due > current ? due - current : 0, 0)
    }

    func close() {
        guard !closed else { return }
        closed = true
        uv_timer_stop(timer)
        closeHandle(timer)
    }

    func handleDidClose() {
        let connection = connection
        self.connection = nil
        connection?.clockDidClose()
    }
}
