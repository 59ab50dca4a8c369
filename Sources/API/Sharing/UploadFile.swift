import Foundation
import Loop
import Server

/// Writes a streamed request body to a new scratch file without blocking the loop or holding
/// the body in memory: chunks gather on the loop into a buffer of at most `flushBytes` (plus one
/// socket read), which a pool thread writes while the body is paused, so a disk slower than the
/// client holds the client back. One file operation runs at a time. On any failure (client gone,
/// 413, timeout, disk) the file is closed and removed. Loop thread only.
final class UploadFile {
    enum Failure: Error {
        case body(RequestBodyStream.Failure)
        case disk(String)
    }

    let path: String
    private let loop: EventLoop
    private let body: RequestBodyStream
    private var descriptor: Int32 = -1
    private var pending: [UInt8] = []
    private var busy = false
    private var ended = false
    private var failure: Failure?
    private var completion: ((Result<String, Failure>) -> Void)?

    static let flushBytes = 1 << 20

    init(path: String, loop: EventLoop, body: RequestBodyStream) {
        self.path = path
        self.loop = loop
        self.body = body
    }

    /// Starts receiving; `completion` gets the path once the whole body is on disk and closed,
    /// or the failure once the file is removed. Called exactly once.
    func receive(_ completion: @escaping (Result<String, Failure>) -> Void) {
        self.completion = completion
        body.onChunk = { [self] bytes in
            pending.append(contentsOf: bytes)
            if pending.count >= Self.flushBytes { step() }
        }
        body.onEnd = { [self] in
            ended = true
            step()
        }
        body.onFailure = { [self] failure in
            if self.failure == nil { self.failure = .body(failure) }
            step()
        }
        // Opening is the first file operation.
        busy = true
        body.pause()
        let path = path
        loop.runOnThreadPool({ () -> Int32 in
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            return fd >= 0 ? fd : -errno
        }) { [self] fd in
            busy = false
            if fd < 0 {
                failure = failure ?? .disk("cannot create \(path): \(String(cString: strerror(-fd)))")
            } else {
                descriptor = fd
            }
            step()
        }
    }

    /// Decides the next file operation once none is running.
    private func step() {
        guard !busy, completion != nil else { return }
        if failure != nil { return discard() }
        if !pending.isEmpty, pending.count >= Self.flushBytes || ended { return flush() }
        if ended { return close() }
        body.resume()
    }

    private func flush() {
        busy = true
        body.pause()
        let bytes = pending
        pending = []
        let fd = descriptor
        loop.runOnThreadPool({ () -> Int32 in
            bytes.withUnsafeBytes { raw in
                var done = 0
                while done < raw.count {
                    let written = write(fd, raw.baseAddress! + done, raw.count - done)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    done += written
                }
                return 0
            }
        }) { [self] error in
            busy = false
            if error != 0, failure == nil { failure = .disk("writing the upload: \(String(cString: strerror(error)))") }
            step()
        }
    }

    private func close() {
        busy = true
        let fd = descriptor
        descriptor = -1
        loop.runOnThreadPool({ Glibc.close(fd) == 0 ? 0 : errno }) { [self] error in
            busy = false
            if error != 0 {
                failure = .disk("closing the upload: \(String(cString: strerror(error)))")
                return discard()
            }
            finish(.success(path))
        }
    }

    private func discard() {
        let fd = descriptor
        descriptor = -1
        pending = []
        let path = path
        busy = true
        loop.runOnThreadPool({ () -> Int32 in
            if fd >= 0 { Glibc.close(fd) }
            return unlink(path)
        }) { [self] _ in
            busy = false
            finish(.failure(failure ?? .disk("discarded")))
        }
    }

    private func finish(_ result: Result<String, Failure>) {
        guard let completion else { return }
        self.completion = nil
        body.onChunk = nil
        body.onEnd = nil
        body.onFailure = nil
        completion(result)
    }
}
