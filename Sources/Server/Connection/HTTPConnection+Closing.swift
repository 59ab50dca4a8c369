import CUV
import Loop

/// The end of a connection: our side shut down once no request will be read and every answer is
/// written, then the lingering close (input read and discarded for a bounded time and amount, so
/// the client reads the last answer rather than a reset); graceful shutdown, the 503 of a full
/// server, and aborts. `close()` itself is with the handles, in `HTTPConnection`.
extension HTTPConnection {
    /// Once no request will be read and every answer is written, shut down our side.
    func finishIfDone() {
        guard phase == .open, !acceptingRequests, slots.isEmpty, inbound == nil, !shutdownRequested else { return }
        shutdownRequested = true
        flush()
        guard phase == .open else { return }
        let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        let status = uv_shutdown(request, stream) { request, status in
            guard let request else { return }
            let handle = request.pointee.handle
            request.deallocate()
            guard let handle, handle.pointee.data != nil else { return }
            handleOwner(handle, as: HTTPConnection.self).didShutdown(status)
        }
        if status < 0 {
            request.deallocate()
            close()
        }
    }

    private func didShutdown(_ status: Int32) {
        guard phase == .open else { return }
        if status < 0 || peerClosed {
            close()
            return
        }
        phase = .lingering
        lingerBudget = limits.maxLingerBytes
        armTimer(deadlines.beganLingering(at: now))
        startReading()
    }

    /// Graceful shutdown: no new request is read; answers in flight are finished, then closed.
    func beginShutdown() {
        loop.assertInLoopThread()
        guard phase == .open else { return }
        if let current = inbound {
            // The body of a request already being received is read to its end and answered.
            current.responder.keepAlive = false
            return
        }
        acceptingRequests = false
        pauseReading(.closing)
        backlog = []
        if let last = slots.last, last.state == .waiting { last.keepAlive = false }
        if slots.isEmpty {
            close()
        } else {
            finishIfDone()
        }
    }

    /// Tells the client the server is full, then closes.
    func rejectOverCapacity() {
        answerAndClose(.unavailable, "the server is at its connection limit; retry later")
    }

    /// Ends the connection without completing its answers, after the bytes already produced
    /// (so a truncated body is visibly truncated rather than missing).
    func abort() {
        loop.assertInLoopThread()
        guard phase == .open, !aborting else {
            close()
            return
        }
        aborting = true
        acceptingRequests = false
        pauseReading(.closing)
        flush()
        if output.queuedBytes == 0 { close() }
    }
}
