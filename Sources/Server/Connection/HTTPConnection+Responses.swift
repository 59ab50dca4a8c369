import CUV
import Loop

/// Answers, strictly in request order whatever order handlers finish in: the output of the
/// response being written goes to the socket (`ConnectionOutput`), that of later ones waits in
/// their own slot until they are first in line; a finished response is logged (`AccessLog`) and
/// retired, and the next one promoted. `Responder` and `ResponseStream` call these.
extension HTTPConnection {
    /// Answers with an error and ends the connection after everything before it is written.
    func answerAndClose(_ kind: Problem.Kind, _ detail: String) {
        answerAndClose(.problem(Problem(kind, detail: detail)), bodyFailure: kind == .requestTimeout ? .timedOut : .malformed)
    }

    /// The same with any answer: for the request being received, else for one read no further
    /// than its request line (`method` and `path` for the access log), or none (`-`).
    func answerAndClose(_ response: HTTPResponse, method: HTTPMethod = HTTPMethod(rawValue: "-"), path: String = "-",
                        bodyFailure: RequestBodyStream.Failure = .malformed) {
        let responder: Responder
        if let current = inbound, current.responder.state == .waiting {
            responder = current.responder
        } else {
            let head = RequestHead(
                method: method, target: path, headers: HTTPHeaders(), version: .http1_1,
                keepAlive: false, contentLength: nil, chunked: false, expectsContinue: false
            )
            responder = Responder(connection: self, head: head, path: path, requestID: server.requestIDs.id(offered: nil), keepAlive: false)
            slots.append(responder)
        }
        inbound?.bodyStream?.fail(bodyFailure)
        inbound = nil
        acceptingRequests = false
        responder.keepAlive = false
        pauseReading(.closing)
        backlog = []
        responder.respond(response)
        finishIfDone()
    }

    func send(_ response: HTTPResponse, for slot: Responder) {
        let withBody = slot.method != .head && response.status.allowsBody
        let date = server.currentDate()
        appendOutput(for: slot) { out in
            ResponseEncoder.writeHead(
                status: response.status, headers: response.headers, framing: .length(response.body.count),
                keepAlive: slot.keepAlive, version: slot.version, date: date, requestID: slot.requestID, into: &out
            )
            if withBody { out.append(contentsOf: response.body) }
        }
        slot.bodyBytes = withBody ? response.body.count : 0
        complete(slot)
    }

    func startStream(status: HTTPStatus, headers: HTTPHeaders, framing: BodyFraming, for slot: Responder) {
        let date = server.currentDate()
        appendOutput(for: slot) { out in
            ResponseEncoder.writeHead(
                status: status, headers: headers, framing: framing,
                keepAlive: slot.keepAlive, version: slot.version, date: date, requestID: slot.requestID, into: &out
            )
        }
    }

    func writeStreamData(_ bytes: UnsafeRawBufferPointer, framing: BodyFraming, for slot: Responder) {
        slot.bodyBytes += bytes.count
        appendOutput(for: slot) { out in
            if case .chunked = framing {
                ResponseEncoder.writeChunk(bytes, into: &out)
            } else {
                out.append(contentsOf: bytes)
            }
        }
    }

    func finishStream(for slot: Responder, framing: BodyFraming, abort: Bool) {
        loop.assertInLoopThread()
        guard !slot.closed else { return }
        if case .chunked = framing {
            appendOutput(for: slot) { $0.append(contentsOf: ResponseEncoder.lastChunk) }
        }
        if case .untilClose = framing { slot.keepAlive = false }
        if abort { slot.keepAlive = false }
        slot.state = .finished
        complete(slot)
    }

    /// Hands a file body to sendfile: it starts once `slot` is first in line and everything
    /// produced before it is written (`startTransferIfReady`).
    func transmit(_ transfer: SendfileTransfer, for slot: Responder) {
        loop.assertInLoopThread()
        guard phase == .open, !slot.closed, !aborting else { return transfer.cancel() }
        slot.transfer = transfer
        transfer.onProgress = { [weak self, weak slot] count in
            guard let self, let slot else { return }
            slot.bodyBytes += count
            slot.stream?.sentDirectly(count)
            deadlines.wrote(at: now)
        }
        transfer.onReadIn = { [weak server] in server?.fileBodies.windowsReadIn += 1 }
        startTransferIfReady()
    }

    /// Starts the first response's file body once the socket has taken everything before it.
    /// The write deadline covers it from here: a client that stops reading is closed.
    func startTransferIfReady() {
        guard phase == .open, !aborting, output.total == 0, let transfer = slots.first?.transfer, !transfer.started else { return }
        var descriptor = uv_os_fd_t()
        guard uv_fileno(UnsafeRawPointer(stream).assumingMemoryBound(to: uv_handle_t.self), &descriptor) == 0 else { return close() }
        armTimer(deadlines.wrote(at: now))
        transfer.start(socket: descriptor)
    }

    func canWrite(for slot: Responder) -> Bool {
        loop.assertInLoopThread()
        guard phase == .open, !slot.closed else { return false }
        if slot === slots.first { return output.total < limits.writeHighWaterMark }
        return slot.pending.count < limits.writeHighWaterMark
    }

    /// Output of the response being written goes to the socket buffer; output of later responses
    /// waits in their own slot until they are first in line.
    func appendOutput(for slot: Responder, _ body: (inout [UInt8]) -> Void) {
        loop.assertInLoopThread()
        guard phase == .open, !slot.closed, !aborting else { return }
        if slot === slots.first {
            body(&output.bytes)
            if !parsing || output.bytes.count >= 64 * 1024 { flush() }
        } else {
            body(&slot.pending)
        }
    }

    private func complete(_ slot: Responder) {
        guard !slot.closed else { return }
        slot.complete = true
        if slot === slots.first { advance() }
    }

    /// Retires finished responses from the front of the line and promotes the next one.
    private func advance() {
        while let first = slots.first, first.complete {
            slots.removeFirst()
            first.retire()
            server.accessLog.record(first)
            if !first.keepAlive {
                acceptingRequests = false
                pauseReading(.closing)
                backlog = []
                let dropped = slots
                slots = []
                for slot in dropped { slot.connectionDidClose() }
                if let current = inbound, current.responder === first {
                    // Answered before its body was read (a refused upload): the rest of the body
                    // is skipped by the lingering close, not awaited until the body timeout.
                    inbound = nil
                    current.bodyStream?.fail(.clientDisconnected)
                    finishIfDone()
                }
                break
            }
            if let next = slots.first, !next.pending.isEmpty {
                output.bytes.append(contentsOf: next.pending)
                next.pending = []
            }
        }
        if slots.isEmpty {
            armTimer(deadlines.becameIdle(at: now))
        }
        if !parsing { flush() }
        if phase != .open { return }
        if let stream = slots.first?.stream, output.total < limits.writeHighWaterMark {
            stream.notifyWritable()
        }
        finishIfDone()
        resumePipelineIfPossible()
    }

    /// Hands the output to the socket (`ConnectionOutput.flush`); write progress is awaited from
    /// here on when some of it had to be queued.
    func flush() {
        guard phase == .open else { return }
        switch output.flush(to: stream) {
        case .written:
            startTransferIfReady()
        case .queued:
            armTimer(deadlines.wrote(at: now))
        case .failed:
            close()
        }
    }

    /// A `uv_write` of `count` bytes finished (`ConnectionOutput`'s write callback).
    func didWrite(_ count: Int, status: Int32) {
        output.written(count)
        deadlines.wrote(at: now)
        guard phase == .open else { return }
        if status < 0 || (aborting && output.queuedBytes == 0) {
            close()
            return
        }
        if output.queuedBytes < limits.writeHighWaterMark / 2, let stream = slots.first?.stream {
            stream.notifyWritable()
        }
        startTransferIfReady()
        resumePipelineIfPossible()
    }
}
