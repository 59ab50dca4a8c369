/// A response body written piece by piece: server-sent events, exports, file downloads.
///
/// Backpressure: `write` always accepts bytes, but a well-behaved producer checks `canWrite`
/// first and, when it is false, waits for `onWritable`, which fires once the bytes queued for the
/// socket have drained below half the high-water mark. A producer that ignores it is bounded only
/// by its own restraint. Loop thread only (checked in debug builds); `Sendable` only to travel to a
/// worker thread and back (`loop.execute { stream.write(...) }`).
public final class ResponseStream: @unchecked Sendable {
    let responder: Responder
    let framing: BodyFraming
    let omitBody: Bool
    var finished = false
    var written = 0
    /// Set when the producer was told to wait, so a drain is worth announcing.
    var wantsWritable = false

    /// Called on the loop thread when `canWrite` has become true again after being false.
    public var onWritable: (() -> Void)?

    /// Called once if the client disconnects (or shutdown's grace period ends) before `finish()`.
    public var onClose: (() -> Void)? {
        get { responder.onClose }
        set { responder.onClose = newValue }
    }

    init(responder: Responder, framing: BodyFraming, omitBody: Bool) {
        self.responder = responder
        self.framing = framing
        self.omitBody = omitBody
    }

    /// Whether the bytes already queued are below the high-water mark and the client is there.
    public var canWrite: Bool {
        guard isOpen else { return false }
        let ok = responder.connection.responses.canWrite(for: responder)
        if !ok { wantsWritable = true }
        return ok
    }

    /// Whether writes can still reach the client.
    public var isOpen: Bool { !finished && !responder.closed }

    public func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    public func write(_ text: String) {
        var text = text
        text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Queues `bytes` (copied). With a declared length, bytes beyond it are dropped.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard isOpen, !bytes.isEmpty else { return }
        var bytes = bytes
        if case .length(let length) = framing {
            let room = max(0, length - written)
            if bytes.count > room { bytes = UnsafeRawBufferPointer(rebasing: bytes[..<room]) }
        }
        written += bytes.count
        guard !omitBody else { return }
        responder.connection.responses.writeStreamData(bytes, framing: framing, for: responder)
        if !responder.connection.responses.canWrite(for: responder) { wantsWritable = true }
    }

    /// Whether `range` of a file can be this stream's whole body by sendfile(2): the body is of
    /// exactly that length, not begun, not omitted (`HEAD`), and the client is there.
    func takesFile(_ range: Range<Int>) -> Bool {
        guard isOpen, !omitBody, written == 0, !range.isEmpty, case .length(let length) = framing else { return false }
        return length == range.count
    }

    /// Sends `range` of the open `file` as the whole body by sendfile(2) (`SendfileTransfer`,
    /// which owns `file` from here and tells `end` how it ended). Only when `takesFile(range)`.
    func sendFile(_ file: Int32, range: Range<Int>, end: @escaping (SendfileTransfer.End) -> Void) {
        let transfer = SendfileTransfer(loop: responder.loop, file: file, range: range)
        transfer.onEnd = end
        responder.connection.responses.transmit(transfer, for: responder)
    }

    /// `count` more bytes of the body went to the socket without passing through `write`.
    func sentDirectly(_ count: Int) {
        written += count
    }

    /// Ends the body. A declared length that was not reached cannot be repaired, so the
    /// connection is closed after the bytes that were sent.
    public func finish() {
        guard isOpen else { return }
        finished = true
        onWritable = nil
        var shortBody = false
        if case .length(let length) = framing, written < length, !omitBody { shortBody = true }
        responder.connection.responses.finishStream(for: responder, framing: omitBody ? .length(0) : framing, abort: shortBody)
    }

    /// Ends the connection mid-body, so the client sees a truncated response, never a
    /// complete-looking one.
    public func abort() {
        guard isOpen else { return }
        finished = true
        onWritable = nil
        responder.abortConnection()
    }

    func notifyWritable() {
        guard wantsWritable, isOpen else { return }
        wantsWritable = false
        onWritable?()
    }
}
