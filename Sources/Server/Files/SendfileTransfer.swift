import CUV
import Glibc
import Loop

/// One file body sent from the page cache straight to a connection's socket with sendfile(2):
/// no byte of it passes through packd's memory.
///
/// It runs on the loop thread and never waits there: sendfile on the non-blocking socket sends
/// what the socket buffer takes and returns; when the socket is full the transfer waits for it to
/// become writable through a uv poll handle on a duplicate of the socket's descriptor (libuv
/// allows one watcher per descriptor, and the connection's tcp handle has the original), started
/// only then and kept until the body is done. It sends at most `turnBudget` bytes a turn, so many
/// downloads share the loop. Before each window of `window` bytes it checks that the window is in
/// the page cache (`PageCacheResidency`): one that is not is read in on the thread pool first, so a
/// cold file never stalls the loop on the disk.
///
/// A client that stops reading costs its descriptors (the file and the duplicate) and this object,
/// no buffer; the connection's write deadline closes it (`isActive` counts as writing).
///
/// The connection starts it once its response is first in line and the head is out (`start`), and
/// cancels it when it closes. It owns `file` from `init` on and closes it when it ends, except on
/// `.unsupported`, when the caller gets it back to read the body another way.
final class SendfileTransfer: LoopHandleOwner {
    enum End: Equatable {
        /// Every byte was sent.
        case sent
        /// sendfile(2) refused the file before any byte went (a file system without it): the file
        /// descriptor is the caller's again.
        case unsupported(Int32)
        /// The file or the socket failed (errno), or the file ended early: the body is short.
        case failed(Int32)
        /// The connection closed first.
        case cancelled
    }

    /// Bytes sent to one connection in one turn of the loop before the others get theirs.
    static let turnBudget = 2 << 20
    /// Bytes of the file checked for page-cache residency (and read in when not) at a time.
    static let window = 8 << 20

    private let loop: EventLoop
    let file: Int32
    private var offset: Int
    private(set) var remaining: Int
    private var sent = 0
    private var socket: Int32 = -1
    private var poll: UnsafeMutablePointer<uv_poll_t>?
    private var pollDescriptor: Int32 = -1
    private var polling = false
    /// Bytes before this offset were found in the page cache (or read in).
    private var residentUntil = 0
    private var warming = false
    private(set) var started = false
    private(set) var ended = false
    private var releasesFile = false

    /// Bytes handed to the socket, after each sendfile that sent some.
    var onProgress: ((Int) -> Void)?
    /// Called once, on the loop thread.
    var onEnd: ((End) -> Void)?
    /// A window was not in the page cache and is being read in on the thread pool.
    var onReadIn: (() -> Void)?

    init(loop: EventLoop, file: Int32, range: Range<Int>) {
        self.loop = loop
        self.file = file
        offset = range.lowerBound
        remaining = range.count
        residentUntil = range.lowerBound
    }

    /// Started and not ended: the connection expects write progress from it.
    var isActive: Bool { started && !ended }

    /// Begins sending to `socket` (the connection's descriptor), which nothing else writes to
    /// until this transfer ends.
    func start(socket: Int32) {
        loop.assertInLoopThread()
        guard !started, !ended else { return }
        started = true
        self.socket = socket
        pump()
    }

    /// The connection closed: stops at once.
    func cancel() {
        end(.cancelled)
    }

    // MARK: sending

    private func pump() {
        guard started, !ended, !warming else { return }
        var budget = Self.turnBudget
        while remaining > 0 && budget > 0 {
            if offset >= residentUntil {
                let window = offset..<(offset + min(remaining, Self.window))
                guard PageCacheResidency.isResident(file: file, window) else {
                    warm(window)
                    return
                }
                residentUntil = window.upperBound
            }
            let count = min(remaining, residentUntil - offset, budget)
            var position = off_t(offset)
            let result = sendfile(socket, file, &position, count)
            if result > 0 {
                offset += result
                remaining -= result
                budget -= result
                sent += result
                onProgress?(result)
                if ended { return }
                if result < count { break }
            } else if result == 0 {
                // The file is shorter than the range: the declared length cannot be met.
                return end(.failed(0))
            } else {
                let error = errno
                if error == EINTR { continue }
                if error == EAGAIN || error == EWOULDBLOCK { break }
                let unsupported = error == EINVAL || error == ENOSYS || error == EOPNOTSUPP || error == ESPIPE
                return end(unsupported && sent == 0 ? .unsupported(file) : .failed(error))
            }
        }
        if remaining == 0 { return end(.sent) }
        // Full, or this turn's share sent: carry on when the socket can take more (level-
        // triggered, so a socket with room calls back on the next turn).
        startPolling()
    }

    private func startPolling() {
        guard !polling, !ended else { return }
        if poll == nil {
            let duplicate = fcntl(socket, F_DUPFD_CLOEXEC, 0)
            guard duplicate >= 0 else { return end(.failed(errno)) }
            let handle = allocateHandle(uv_poll_t.self, owner: self)
            let status = uv_poll_init(loop.raw, handle, duplicate)
            guard status == 0 else {
                // Never initialised, so never closed by libuv: give back what allocateHandle took.
                Unmanaged<SendfileTransfer>.fromOpaque(handle.pointee.data).release()
                handle.deallocate()
                Glibc.close(duplicate)
                return end(.failed(-status))
            }
            poll = handle
            pollDescriptor = duplicate
        }
        guard let poll else { return }
        let status = uv_poll_start(poll, Int32(UV_WRITABLE.rawValue)) { handle, status, _ in
            let transfer = handleOwner(handle, as: SendfileTransfer.self)
            if status < 0 { return transfer.end(.failed(-status)) }
            transfer.pump()
        }
        guard status == 0 else { return end(.failed(-status)) }
        polling = true
    }

    private func stopPolling() {
        guard polling, let poll else { return }
        uv_poll_stop(poll)
        polling = false
    }

    /// Reads `window` into the page cache on the thread pool, then carries on.
    private func warm(_ window: Range<Int>) {
        warming = true
        stopPolling()
        onReadIn?()
        let file = file
        loop.runOnThreadPool({ PageCacheResidency.readIn(file: file, window) }, then: { [self] _ in
            warming = false
            if ended {
                // Ended meanwhile: the file could not be released while the pool read it.
                return releaseFileIfEnded()
            }
            // Sent whether or not the read succeeded: sendfile reports a failure itself.
            residentUntil = window.upperBound
            pump()
        })
    }

    // MARK: the end

    private func end(_ how: End) {
        guard !ended else { return }
        ended = true
        if let poll {
            self.poll = nil
            polling = false
            closeHandle(poll)
        }
        if case .unsupported = how { releasesFile = false } else { releasesFile = true }
        releaseFileIfEnded()
        let callback = onEnd
        onEnd = nil
        onProgress = nil
        onReadIn = nil
        callback?(how)
    }

    /// Closes the file (on the thread pool, like every other file operation of the server) once
    /// the transfer has ended and no read of it is in flight.
    private func releaseFileIfEnded() {
        guard ended, releasesFile, !warming else { return }
        releasesFile = false
        let file = file
        loop.runOnThreadPool({ Glibc.close(file) }, then: { _ in })
    }

    func handleDidClose() {
        if pollDescriptor >= 0 {
            Glibc.close(pollDescriptor)
            pollDescriptor = -1
        }
    }
}
