import CUV
import Loop

/// Why reading from a connection is paused; reading runs only while the set is empty.
struct ReadPause: OptionSet {
    let rawValue: UInt8
    /// Too many responses outstanding or too many bytes queued: the client must wait.
    static let pipeline = ReadPause(rawValue: 1)
    /// A streamed request body's consumer asked to wait.
    static let bodyConsumer = ReadPause(rawValue: 2)
    /// No further request will be read (error answered, `Connection: close`, shutdown).
    static let closing = ReadPause(rawValue: 4)
}

/// The socket of one connection: its libuv tcp handle, reading (paused for any of `ReadPause`'s
/// reasons), the bytes on their way out (`ConnectionOutput`), shutting down our side, closing.
/// It tells its connection what happened and decides nothing about HTTP.
///
/// The handle holds a retain on the socket (the `LoopHandleOwner` rule) and the socket holds its
/// connection until the handle is closed, so neither goes while libuv may still call back.
final class ConnectionSocket: LoopHandleOwner {
    private let tcp: UnsafeMutablePointer<uv_tcp_t>
    /// Set by the connection once it is made; let go when the handle has closed.
    var connection: HTTPConnection?
    private(set) var paused: ReadPause = []
    private var reading = false
    /// Read regardless of pauses: the lingering close discards what arrives.
    private var discarding = false
    private(set) var closed = false
    var output = ConnectionOutput()

    init(loop: EventLoop) throws {
        tcp = .allocate(capacity: 1)
        UnsafeMutableRawPointer(tcp).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<uv_tcp_t>.size)
        let status = uv_tcp_init(loop.raw, tcp)
        guard status == 0 else {
            tcp.deallocate()
            throw UVError(status, "uv_tcp_init")
        }
        // The ownership rule of LoopHandle.swift, by hand: `self` only exists now.
        tcp.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    var stream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(tcp).assumingMemoryBound(to: uv_stream_t.self)
    }

    /// The socket's descriptor, for sendfile.
    var descriptor: Int32? {
        var descriptor = uv_os_fd_t()
        let handle = UnsafeRawPointer(tcp).assumingMemoryBound(to: uv_handle_t.self)
        return uv_fileno(handle, &descriptor) == 0 ? descriptor : nil
    }

    func setNoDelay() {
        uv_tcp_nodelay(tcp, 1)
    }

    // MARK: reading

    func startReading() {
        guard !reading, !closed, discarding || paused.isEmpty else { return }
        let status = uv_read_start(stream, { handle, _, buffer in
            buffer?.pointee = handleOwner(handle, as: ConnectionSocket.self).connection?.server.readBuffer ?? uv_buf_init(nil, 0)
        }, { handle, count, buffer in
            let socket = handleOwner(handle, as: ConnectionSocket.self)
            guard let connection = socket.connection else { return }
            if count < 0 {
                connection.peerDidClose()
            } else if count > 0, let base = buffer?.pointee.base {
                connection.didRead(base, count)
            }
        })
        if status == 0 { reading = true }
    }

    func stopReading() {
        guard reading else { return }
        uv_read_stop(stream)
        reading = false
    }

    func pause(_ reason: ReadPause) {
        paused.insert(reason)
        stopReading()
    }

    /// Lifts `reason`; false when it was not in force.
    @discardableResult
    func resume(_ reason: ReadPause) -> Bool {
        guard paused.contains(reason) else { return false }
        paused.remove(reason)
        startReading()
        return true
    }

    /// Marks `reason` without stopping a read in progress (the parser has paused itself).
    func hold(_ reason: ReadPause) {
        paused.insert(reason)
    }

    /// Lifts `reason` without starting to read (the caller resumes the parser first).
    func release(_ reason: ReadPause) {
        paused.remove(reason)
    }

    /// From now on everything that arrives is read, whatever pauses remain, and discarded.
    func readToDiscard() {
        discarding = true
        startReading()
    }

    // MARK: writing

    /// Hands what is produced to the socket (`ConnectionOutput.flush`).
    func flush() -> ConnectionOutput.Flush {
        closed ? .written : output.flush(to: stream)
    }

    /// A `uv_write` of `count` bytes finished (`ConnectionOutput`'s write callback).
    func didWrite(_ count: Int, status: Int32) {
        output.written(count)
        connection?.didWrite(status: status)
    }

    /// Shuts our side down once everything queued is written; the connection hears when.
    func shutdown() -> Bool {
        let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        let status = uv_shutdown(request, stream) { request, status in
            guard let request else { return }
            let handle = request.pointee.handle
            request.deallocate()
            guard let handle, handle.pointee.data != nil else { return }
            handleOwner(handle, as: ConnectionSocket.self).connection?.didShutdown(status)
        }
        if status < 0 { request.deallocate() }
        return status == 0
    }

    // MARK: closing

    func close() {
        guard !closed else { return }
        closed = true
        stopReading()
        output.bytes = []
        closeHandle(tcp)
    }

    func handleDidClose() {
        let connection = connection
        self.connection = nil
        connection?.socketDidClose()
    }
}
