import CCurl
import CUV
import Loop

/// The `uv_poll_t` watching one socket curl asked about (CURLMOPT_SOCKETFUNCTION). Created on
/// curl's first interest in the socket, stopped and closed on CURL_POLL_REMOVE — before curl closes
/// the descriptor, as libuv requires.
final class CurlSocketPoll: LoopHandleOwner {
    let socket: curl_socket_t
    private var handle: UnsafeMutablePointer<uv_poll_t>?
    private weak var multi: CurlMulti?

    /// Nil when libuv refuses the descriptor; curl then sees no readiness and the transfer times out.
    init?(loop: EventLoop, socket: curl_socket_t, multi: CurlMulti) {
        self.socket = socket
        self.multi = multi
        let handle = allocateHandle(uv_poll_t.self, owner: self)
        guard uv_poll_init_socket(loop.raw, handle, socket) == 0 else {
            // libuv never knew the handle: no close callback will release what allocateHandle retained.
            Unmanaged<CurlSocketPoll>.passUnretained(self).release()
            handle.deallocate()
            return nil
        }
        self.handle = handle
    }

    /// Watches for the readiness curl wants (`CURL_POLL_IN`/`OUT`/`INOUT`).
    func watch(_ what: Int32) {
        guard let handle else { return }
        var events: Int32 = 0
        if what == CURL_POLL_IN || what == CURL_POLL_INOUT { events |= Int32(UV_READABLE.rawValue) }
        if what == CURL_POLL_OUT || what == CURL_POLL_INOUT { events |= Int32(UV_WRITABLE.rawValue) }
        uv_poll_start(handle, events) { handle, status, events in
            let poll = handleOwner(handle, as: CurlSocketPoll.self)
            var flags: Int32 = 0
            if status < 0 {
                flags = CURL_CSELECT_ERR
            } else {
                if events & Int32(UV_READABLE.rawValue) != 0 { flags |= CURL_CSELECT_IN }
                if events & Int32(UV_WRITABLE.rawValue) != 0 { flags |= CURL_CSELECT_OUT }
            }
            poll.multi?.socketAction(poll.socket, flags: flags)
        }
    }

    func close() {
        guard let handle else { return }
        self.handle = nil
        uv_poll_stop(handle)
        closeHandle(handle)
    }
}
