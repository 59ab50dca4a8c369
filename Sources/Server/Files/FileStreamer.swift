import CUV
import Glibc
import Loop

/// Sends a file as a response body without blocking the loop or buffering the file. Open and stat
/// run on libuv's thread pool; then the body goes from the page cache to the socket with
/// sendfile(2) (`SendfileTransfer`), once the response is first in line and its head is out.
///
/// Where sendfile cannot apply — a file system without it (sendfile refuses the file before any
/// byte), or `ServerLimits.sendfile` off — the body is read instead: positional reads of one
/// 64 KiB block at a time on the thread pool, the next one only once the response stream can take
/// it (`canWrite`/`onWritable`), so a slow client holds the reads back.
///
/// With a `range`, only those bytes are sent: the caller has answered `206` or checked the size
/// already; a file shorter than the range ends the answer early (the client sees a short body,
/// never wrong bytes).
///
/// Each in-flight uv_fs request holds a retain on the streamer, released in its callback, so the
/// streamer lives exactly as long as libuv may still call back into it.
final class FileStreamer {
    private let loop: EventLoop
    private let responder: Responder
    private let path: String
    private let status: HTTPStatus
    private let headers: HTTPHeaders
    private let completion: ((Bool) -> Void)?
    private let range: Range<Int>?
    private var file: Int32 = -1
    /// The file offset of the next read.
    private var offset = 0
    private var stream: ResponseStream?
    private var remaining = 0
    /// The read path's block; allocated only when the body is read rather than sent by sendfile.
    private var block: UnsafeMutableRawBufferPointer?
    private var finished = false

    static let blockSize = 64 * 1024

    init(responder: Responder, path: String, status: HTTPStatus, headers: HTTPHeaders, range: Range<Int>?,
         completion: ((Bool) -> Void)?) {
        loop = responder.loop
        self.responder = responder
        self.path = path
        self.status = status
        self.headers = headers
        self.completion = completion
        self.range = range
    }

    deinit { block?.deallocate() }

    func start() {
        let request = makeRequest()
        let status = uv_fs_open(loop.raw, request, path, O_RDONLY | O_CLOEXEC, 0) { request in
            FileStreamer.complete(request) { streamer, result in streamer.didOpen(result) }
        }
        if status < 0 { failedToStart(request, status) }
    }

    // MARK: steps

    private func didOpen(_ result: Int) {
        guard result >= 0 else {
            respondNotFound(Int32(truncatingIfNeeded: result))
            return
        }
        file = Int32(truncatingIfNeeded: result)
        let request = makeRequest()
        let status = uv_fs_fstat(loop.raw, request, file) { request in
            let size = request.map { Int($0.pointee.statbuf.st_size) } ?? -1
            FileStreamer.complete(request) { streamer, result in streamer.didStat(result < 0 ? -1 : size) }
        }
        if status < 0 { failedToStart(request, status) }
    }

    private func didStat(_ size: Int) {
        guard size >= 0, responder.isOpen else {
            respondNotFound(UV_EIO.rawValue)
            return
        }
        let bytes = range ?? 0..<size
        guard bytes.upperBound <= size else {
            respondNotFound(UV_EINVAL.rawValue)
            return
        }
        offset = bytes.lowerBound
        remaining = bytes.count
        let stream = responder.stream(status: status, headers: headers, contentLength: bytes.count)
        self.stream = stream
        stream.onClose = { [self] in end(success: false) }
        stream.onWritable = { [self] in readNext() }
        if responder.method == .head {
            stream.finish()
            end(success: true)
            return
        }
        if responder.connection.limits.sendfile, stream.takesFile(bytes) {
            // The transfer owns the descriptor from here (and closes it) unless it hands it back,
            // which it may do before `sendFile` returns.
            let descriptor = file
            file = -1
            responder.connection.server.fileBodies.sendfile += 1
            stream.sendFile(descriptor, range: bytes) { [self] how in transferEnded(how) }
            return
        }
        responder.connection.server.fileBodies.reads += 1
        readNext()
    }

    private func transferEnded(_ how: SendfileTransfer.End) {
        if case .unsupported(let descriptor) = how {
            // Ours again: read from, or closed if the answer is over.
            file = descriptor
            if finished { closeFile() }
        }
        guard !finished, let stream else { return }
        switch how {
        case .sent:
            remaining = 0
            stream.finish()
            end(success: true)
        case .unsupported:
            responder.connection.server.fileBodies.sendfile -= 1
            responder.connection.server.fileBodies.reads += 1
            readNext()
        case .failed:
            // Short: `finish` closes the connection after what was sent.
            stream.finish()
            end(success: false)
        case .cancelled:
            end(success: false)
        }
    }

    private func readNext() {
        guard !finished, let stream else { return }
        if remaining == 0 || !stream.isOpen {
            stream.finish()
            end(success: remaining == 0)
            return
        }
        guard stream.canWrite else { return }
        let block = self.block ?? .allocate(byteCount: Self.blockSize, alignment: 16)
        self.block = block
        let request = makeRequest()
        var buffer = uv_buf_init(block.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(min(Self.blockSize, remaining)))
        let status = uv_fs_read(loop.raw, request, file, &buffer, 1, Int64(offset)) { request in
            FileStreamer.complete(request) { streamer, result in streamer.didRead(result) }
        }
        if status < 0 {
            release(request)
            stream.finish()
            end(success: false)
        }
    }

    private func didRead(_ result: Int) {
        guard !finished, let stream else { return }
        guard result > 0 else {
            // An error, or the file shrank under us: the declared length cannot be met.
            stream.finish()
            end(success: false)
            return
        }
        let count = min(result, remaining)
        remaining -= count
        offset += count
        guard let block else { return }
        stream.write(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(block)[..<count]))
        readNext()
    }

    private func respondNotFound(_ code: Int32) {
        responder.respond(.problem(.notFound, "file not available: \(String(cString: uv_strerror(code)))"))
        end(success: false)
    }

    private func end(success: Bool) {
        guard !finished else { return }
        finished = true
        stream?.onWritable = nil
        stream?.onClose = nil
        closeFile()
        completion?(success)
    }

    private func closeFile() {
        guard file >= 0 else { return }
        let request = makeRequest()
        if uv_fs_close(loop.raw, request, file, { request in FileStreamer.complete(request) { _, _ in } }) < 0 {
            release(request)
        }
        file = -1
    }

    // MARK: request ownership

    private func makeRequest() -> UnsafeMutablePointer<uv_fs_t> {
        let request = UnsafeMutablePointer<uv_fs_t>.allocate(capacity: 1)
        request.pointee.data = Unmanaged.passRetained(self).toOpaque()
        return request
    }

    private func release(_ request: UnsafeMutablePointer<uv_fs_t>) {
        if let data = request.pointee.data { Unmanaged<FileStreamer>.fromOpaque(data).release() }
        request.deallocate()
    }

    private func failedToStart(_ request: UnsafeMutablePointer<uv_fs_t>, _ status: Int32) {
        release(request)
        respondNotFound(status)
    }

    /// Runs `body` with the owning streamer and the request's result, then frees the request.
    private static func complete(_ request: UnsafeMutablePointer<uv_fs_t>?, _ body: (FileStreamer, Int) -> Void) {
        guard let request, let data = request.pointee.data else { return }
        let result = request.pointee.result
        let streamer = Unmanaged<FileStreamer>.fromOpaque(data).takeRetainedValue()
        uv_fs_req_cleanup(request)
        request.deallocate()
        body(streamer, result)
    }
}

extension Responder {
    /// Answers with the file at `path` (404 problem if it cannot be opened), streamed with
    /// backpressure and never held in memory; only `range` of it when given (a `206`'s bytes).
    /// `completion` says whether every byte was sent.
    public func respondWithFile(
        path: String, status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), range: Range<Int>? = nil,
        completion: ((Bool) -> Void)? = nil
    ) {
        FileStreamer(responder: self, path: path, status: status, headers: headers, range: range, completion: completion).start()
    }
}
