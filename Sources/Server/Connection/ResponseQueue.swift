import CUV
import Loop

/// A connection's answers, strictly in request order whatever order handlers finish in: the
/// responder first in line writes to the socket's output, later ones into their own `pending`
/// bytes until they are first; a finished answer is logged (`AccessLog`) and retired and the next
/// one promoted. A file body (`SendfileTransfer`) starts once its answer is first in line and
/// everything before it is on the socket. `Responder` and `ResponseStream` call these.
///
/// Owned by its connection, loop thread only.
final class ResponseQueue {
    private unowned let connection: HTTPConnection
    /// Requests whose responses are not complete yet, in request order; the first is being written.
    private(set) var slots: [Responder] = []

    init(connection: HTTPConnection) {
        self.connection = connection
    }

    var count: Int { slots.count }
    var isEmpty: Bool { slots.isEmpty }
    var first: Responder? { slots.first }

    func append(_ responder: Responder) {
        slots.append(responder)
    }

    /// The connection is gone: every answer not yet complete is given up.
    func dropAll() {
        let dropped = slots
        slots = []
        for slot in dropped { slot.connectionDidClose() }
    }

    /// A sendfile body of the first answer is under way: write progress is expected.
    var transferActive: Bool { slots.first?.transfer?.isActive == true }

    // MARK: producing

    func send(_ response: HTTPResponse, for slot: Responder) {
        let withBody = slot.method != .head && response.status.allowsBody
        let date = connection.server.currentDate()
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
        let date = connection.server.currentDate()
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
        connection.loop.assertInLoopThread()
        guard !slot.closed else { return }
        if case .chunked = framing {
            appendOutput(for: slot) { $0.append(contentsOf: ResponseEncoder.lastChunk) }
        }
        if case .untilClose = framing { slot.keepAlive = false }
        if abort { slot.keepAlive = false }
        slot.state = .finished
        complete(slot)
    }

    func canWrite(for slot: Responder) -> Bool {
        connection.loop.assertInLoopThread()
        guard connection.isOpen, !slot.closed else { return false }
        let limit = connection.limits.writeHighWaterMark
        if slot === slots.first { return connection.socket.output.total < limit }
        return slot.pending.count < limit
    }

    /// Output of the response being written goes to the socket's output; output of later
    /// responses waits in their own slot until they are first in line.
    func appendOutput(for slot: Responder, _ body: (inout [UInt8]) -> Void) {
        connection.loop.assertInLoopThread()
        guard connection.isOpen, !slot.closed, !connection.aborting else { return }
        if slot === slots.first {
            body(&connection.socket.output.bytes)
            if !connection.reader.parsing || connection.socket.output.bytes.count >= 64 * 1024 { connection.flush() }
        } else {
            body(&slot.pending)
        }
    }

    // MARK: file bodies

    /// Hands a file body to sendfile: it starts once `slot` is first in line and everything
    /// produced before it is written (`startTransferIfReady`).
    func transmit(_ transfer: SendfileTransfer, for slot: Responder) {
        connection.loop.assertInLoopThread()
        guard connection.isOpen, !slot.closed, !connection.aborting else { return transfer.cancel() }
        slot.transfer = transfer
        transfer.onProgress = { [weak connection, weak slot] count in
            guard let connection, let slot else { return }
            slot.bodyBytes += count
            slot.stream?.sentDirectly(count)
            connection.clock.deadlines.wrote(at: connection.clock.now)
        }
        transfer.onReadIn = { [weak server = connection.server] in server?.fileBodies.windowsReadIn += 1 }
        startTransferIfReady()
    }

    /// Starts the first answer's file body once the socket has taken everything before it. The
    /// write deadline covers it from here: a client that stops reading is closed.
    func startTransferIfReady() {
        guard connection.isOpen, !connection.aborting, connection.socket.output.total == 0,
              let transfer = slots.first?.transfer, !transfer.started else { return }
        guard let descriptor = connection.socket.descriptor else { return connection.close() }
        connection.clock.arm(connection.clock.deadlines.wrote(at: connection.clock.now))
        transfer.start(socket: descriptor)
    }

    // MARK: retiring

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
            connection.server.accessLog.record(first)
            if !first.keepAlive {
                connection.stopAcceptingRequests()
                dropAll()
                // Answered before its body was read (a refused upload): the rest of the body is
                // skipped by the lingering close, not awaited until the body timeout.
                if connection.reader.abandonBody(answeredBy: first) { connection.finishIfDone() }
                break
            }
            if let next = slots.first, !next.pending.isEmpty {
                connection.socket.output.bytes.append(contentsOf: next.pending)
                next.pending = []
            }
        }
        if slots.isEmpty {
            connection.clock.arm(connection.clock.deadlines.becameIdle(at: connection.clock.now))
        }
        if !connection.reader.parsing { connection.flush() }
        guard connection.isOpen else { return }
        if let stream = slots.first?.stream, connection.socket.output.total < connection.limits.writeHighWaterMark {
            stream.notifyWritable()
        }
        connection.finishIfDone()
        connection.reader.resumePipelineIfPossible()
    }

    /// The socket took queued bytes: a waiting producer of the first answer may go on.
    func outputDrained() {
        if connection.socket.output.queuedBytes < connection.limits.writeHighWaterMark / 2, let stream = slots.first?.stream {
            stream.notifyWritable()
        }
        startTransferIfReady()
    }
}
