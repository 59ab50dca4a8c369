import CUV
import Glibc
import Loop

/// Sends a file as a response body without blocking the loop or buffering the file: open, stat
/// and reads run on libuv's thread pool, and the next block is read only once the response
/// stream can take it (`canWrite`/`onWritable`), so a slow client holds the reads back.
///
/// With a `range`, only those bytes are sent (positional reads from its first byte): the caller
/// has answered `206` or checked the size already; a file shorter than the range ends the
/// answer early (the client sees a short body, never wrong bytes).
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
    private let block: UnsafeMutableRawBufferPointer
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
        block = .allocate(byteCount: Self.blockSize, alignment: 16)
    }

    deinit { block.deallocate() }

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
        readNext()
    }

    private func readNext() {
        guard !finished, let stream else { return }
        if remaining == 0 || !stream.isOpen {
            stream.finish()
            end(success: remaining == 0)
            return
        }
        guard stream.canWrite else { return }
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
        if file >= 0 {
            let request = makeRequest()
            if uv_fs_close(loop.raw, request, file, { request in FileStreamer.complete(request) { _, _ in } }) < 0 {
                release(request)
            }
            file = -1
        }
        completion?(success)
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
