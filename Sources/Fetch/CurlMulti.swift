import CCurl
import CUV
import Loop

/// Owns one curl multi handle driven by the uv loop, as curl's `multi-uv.c` does: curl tells us
/// which sockets to watch and when to wake it; we call `curl_multi_socket_action` for readiness
/// and timeouts and report finished easy handles. Loop thread only.
///
/// Nothing here calls into curl from curl's own callbacks: the socket callback only starts or
/// stops polls, the timer callback only arms a uv timer.
final class CurlMulti {
    struct Limits {
        var maxTotalConnections: Int
        var maxHostConnections: Int
        /// Our side's cap on HTTP/2 streams per connection; curl uses the smaller of it and the
        /// server's SETTINGS_MAX_CONCURRENT_STREAMS (libcurl 7.67+).
        var maxStreamsPerConnection: Int
    }

    let handle: UnsafeMutableRawPointer
    private let loop: EventLoop
    private let timer: LoopTimer
    /// curl's "time out now" (a zero timeout, asked for after every handle added or finished).
    private let immediate: NextTurn
    private var polls: [curl_socket_t: CurlSocketPoll] = [:]
    private var maxHostConnections: Int
    /// Called for each finished easy handle, after curl has returned from `socket_action`.
    var onDone: (UnsafeMutableRawPointer, CURLcode) -> Void = { _, _ in }

    init(loop: EventLoop, limits: Limits) throws(FetchError) {
        guard let multi = curl_multi_init() else { throw .transport(curlCode: Int32(CURLE_OUT_OF_MEMORY.rawValue)) }
        handle = multi
        maxHostConnections = limits.maxHostConnections
        self.loop = loop
        timer = LoopTimer(loop: loop)
        immediate = NextTurn(loop: loop)
        let me = Unmanaged.passUnretained(self).toOpaque()
        packd_multi_setopt_socket_callback(multi) { _, socket, what, userp, socketp in
            guard let userp else { return 0 }
            Unmanaged<CurlMulti>.fromOpaque(userp).takeUnretainedValue().socketChanged(socket, what: what, poll: socketp)
            return 0
        }
        packd_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, me)
        packd_multi_setopt_timer_callback(multi) { _, timeout, userp in
            guard let userp else { return 0 }
            Unmanaged<CurlMulti>.fromOpaque(userp).takeUnretainedValue().timeoutChanged(timeout)
            return 0
        }
        packd_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, me)
        packd_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        packd_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, limits.maxTotalConnections)
        packd_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limits.maxHostConnections)
        packd_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, limits.maxTotalConnections)
        packd_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, limits.maxStreamsPerConnection)
    }

    /// Changes the per-host connection cap for connections opened from now on (open ones stay).
    func setMaxHostConnections(_ count: Int) {
        guard count != maxHostConnections else { return }
        maxHostConnections = count
        packd_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, count)
    }

    func add(_ easy: UnsafeMutableRawPointer) -> Bool {
        curl_multi_add_handle(handle, easy) == CURLM_OK
    }

    func remove(_ easy: UnsafeMutableRawPointer) {
        curl_multi_remove_handle(handle, easy)
    }

    /// Readiness on `socket` (or a timeout when `socket` is CURL_SOCKET_TIMEOUT).
    func socketAction(_ socket: curl_socket_t, flags: Int32) {
        var running: Int32 = 0
        curl_multi_socket_action(handle, socket, flags, &running)
        drainFinished()
    }

    private func drainFinished() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(handle, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            // The message is freed by the next curl call: copy out what we need first.
            let result = message.pointee.data.result
            onDone(easy, result)
        }
    }

    private func socketChanged(_ socket: curl_socket_t, what: Int32, poll: UnsafeMutableRawPointer?) {
        if what == CURL_POLL_REMOVE {
            polls.removeValue(forKey: socket)?.close()
            curl_multi_assign(handle, socket, nil)
            return
        }
        var watcher = poll.map { Unmanaged<CurlSocketPoll>.fromOpaque($0).takeUnretainedValue() }
        if watcher == nil {
            watcher = CurlSocketPoll(loop: loop, socket: socket, multi: self)
            guard let watcher else { return }
            polls[socket] = watcher
            curl_multi_assign(handle, socket, Unmanaged.passUnretained(watcher).toOpaque())
        }
        watcher?.watch(what)
    }

    /// As `multi-uv.c`, a zero timeout is never acted on inside curl's callback; unlike it, not on
    /// a 1 ms timer either (a loopback transfer takes less), but on the loop's next turn: a zero
    /// timer would run in the very timer pass that finished the previous transfer, and curl asks
    /// for one after every transfer, so the loop would not read a socket until curl ran dry.
    private func timeoutChanged(_ milliseconds: Int) {
        guard milliseconds >= 0 else {
            timer.stop()
            immediate.cancel()
            return
        }
        guard milliseconds > 0 else {
            timer.stop()
            immediate.schedule { [weak self] in self?.socketAction(CURL_SOCKET_TIMEOUT, flags: 0) }
            return
        }
        immediate.cancel()
        timer.start(after: UInt64(milliseconds)) { [weak self] in
            self?.socketAction(CURL_SOCKET_TIMEOUT, flags: 0)
        }
    }

    /// Frees the multi handle (every easy handle must already be removed) and closes the uv handles.
    func close() {
        curl_multi_cleanup(handle)
        for poll in polls.values { poll.close() }
        polls.removeAll()
        timer.close()
        immediate.close()
    }
}
