import CUV
import Glibc
import Loop

/// A connection's output buffering: the bytes produced for the response being written and not yet
/// handed to the socket, and the count handed to libuv and not yet written (what a slow reader
/// makes the server hold).
///
/// `flush` writes directly (`uv_try_write`) when nothing is queued, and queues the rest as one
/// `uv_write` whose request and bytes share one allocation; the write's callback reports to the
/// socket that owns the stream (`ConnectionSocket.didWrite`).
struct ConnectionOutput {
    /// Produced, not yet handed to the socket.
    var bytes: [UInt8] = []
    /// Handed to libuv, not yet written.
    private(set) var queuedBytes = 0

    enum Flush: Equatable {
        /// Everything went out, or nothing was there.
        case written
        /// The rest is queued in a `uv_write`: write progress is now awaited.
        case queued
        /// The socket refused: the connection must close.
        case failed
    }

    /// Everything not yet written.
    var total: Int { queuedBytes + bytes.count }

    mutating func flush(to stream: UnsafeMutablePointer<uv_stream_t>) -> Flush {
        guard !bytes.isEmpty else { return .written }
        var offset = 0
        if queuedBytes == 0 {
            let result = bytes.withUnsafeMutableBytes { raw -> Int32 in
                var buffer = uv_buf_init(raw.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(raw.count))
                return uv_try_write(stream, &buffer, 1)
            }
            if result > 0 {
                offset = Int(result)
            } else if result < 0 && result != UV_EAGAIN.rawValue {
                return .failed
            }
        }
        var outcome = Flush.written
        if offset < bytes.count {
            let count = bytes.count - offset
            let headerSize = MemoryLayout<uv_write_t>.stride
            guard let memory = malloc(headerSize + count) else { return .failed }
            bytes.withUnsafeBytes { raw in
                (memory + headerSize).copyMemory(from: raw.baseAddress! + offset, byteCount: count)
            }
            let request = memory.bindMemory(to: uv_write_t.self, capacity: 1)
            request.pointee.data = UnsafeMutableRawPointer(bitPattern: count)
            var buffer = uv_buf_init((memory + headerSize).assumingMemoryBound(to: CChar.self), UInt32(count))
            let status = uv_write(request, stream, &buffer, 1) { request, status in
                guard let request else { return }
                let count = Int(bitPattern: request.pointee.data)
                let handle = request.pointee.handle
                free(request)
                guard let handle, handle.pointee.data != nil else { return }
                handleOwner(handle, as: ConnectionSocket.self).didWrite(count, status: status)
            }
            if status < 0 {
                free(memory)
                return .failed
            }
            queuedBytes += count
            outcome = .queued
        }
        discardProduced()
        return outcome
    }

    /// A queued write finished (or failed) with `count` bytes.
    mutating func written(_ count: Int) {
        queuedBytes -= count
    }

    /// Drops what is produced and not yet handed over; a buffer grown by a large answer is
    /// given back rather than kept for the connection's lifetime.
    mutating func discardProduced() {
        if bytes.capacity > 256 * 1024 {
            bytes = []
            bytes.reserveCapacity(4096)
        } else {
            bytes.removeAll(keepingCapacity: true)
        }
    }
}
