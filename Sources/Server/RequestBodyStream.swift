/// A request body delivered chunk by chunk to a route registered with `BodyHandling.streamed`,
/// so an upload can go to a file without ever being held in memory.
///
/// Loop thread only (checked in debug builds); `Sendable` so a consumer writing on another thread can carry it there and
/// back to the loop (`loop.execute { body.resume() }`), never to touch it there.
public final class RequestBodyStream: @unchecked Sendable {
    /// Why a body ended without `onEnd`.
    public enum Failure: Error, Sendable, Equatable {
        case clientDisconnected
        case tooLarge(limit: Int)
        case timedOut
        case malformed
    }

    /// Each chunk as it arrives. The bytes are only valid during the call: copy what you keep.
    public var onChunk: ((UnsafeRawBufferPointer) -> Void)?
    /// The body is complete.
    public var onEnd: (() -> Void)?
    /// The body will not complete. The server has answered (413, 408, 400) or the client is gone.
    public var onFailure: ((Failure) -> Void)?

    public private(set) var receivedBytes = 0
    private(set) var ended = false
    let connection: HTTPConnection

    init(connection: HTTPConnection) {
        self.connection = connection
    }

    /// Stops reading from the socket (after the bytes already received) until `resume()`, so a
    /// slow consumer (a disk write on another thread) holds the client back instead of buffering.
    public func pause() {
        guard !ended else { return }
        connection.pauseReading(.bodyConsumer)
    }

    public func resume() {
        guard !ended else { return }
        connection.resumeReading(.bodyConsumer)
    }

    func deliver(_ bytes: UnsafeRawBufferPointer) {
        guard !ended else { return }
        receivedBytes += bytes.count
        onChunk?(bytes)
    }

    func end() {
        guard !ended else { return }
        ended = true
        connection.resumeReading(.bodyConsumer)
        let callback = onEnd
        clear()
        callback?()
    }

    func fail(_ failure: Failure) {
        guard !ended else { return }
        ended = true
        connection.resumeReading(.bodyConsumer)
        let callback = onFailure
        clear()
        callback?(failure)
    }

    private func clear() {
        onChunk = nil
        onEnd = nil
        onFailure = nil
    }
}
