import Foundation

/// Splits an export over the machine's two cores: the calling thread reads the pack and
/// encodes tiles (inflate, CRC-32, vector layers), a second thread writes the archive (SQLite
/// inserts or file appends). The stages cost about the same, so an export takes roughly the
/// longer of the two instead of their sum. A bounded queue of batches between them keeps memory
/// flat; a failure on either side stops the other and is rethrown on the calling thread.
final class ExportPipeline<Finale: Sendable>: @unchecked Sendable {
    /// What the writer receives: batches, then the finale (what it needs once every tile is
    /// in: format, vector layers).
    enum Delivery {
        case batch(EncodedTileBatch)
        case finished(Finale)
    }

    /// Thrown into a stage when the other one stopped.
    private struct Stopped: Error, CustomStringConvertible {
        var description: String { "the archive writer stopped before the last tile" }
    }

    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var queued: [EncodedTileBatch] = []
    /// Emptied batches the writer hands back, so buffers are reused rather than reallocated.
    private var spare: [EncodedTileBatch] = []
    private let capacity: Int
    private var finale: Finale?
    private var producerFailed = false
    private var consumerError: (any Error)?
    private var consumerDone = false

    private init(capacity: Int) {
        self.capacity = capacity
    }

    /// Runs `produce` on the calling thread and `consume` on a new one. `produce` hands batches
    /// to `send` and returns the finale and its result; `consume` takes deliveries from `next`
    /// until `.finished`. The result is `produce`'s; an error from either side is rethrown here
    /// (the writer's, when the producer only stopped because of it).
    static func run<Result>(
        capacity: Int = 3,
        produce: (_ send: (inout EncodedTileBatch) throws -> Void) throws -> (Finale, Result),
        consume: @escaping @Sendable (_ next: () throws -> Delivery) throws -> Void
    ) throws -> Result {
        let pipeline = ExportPipeline(capacity: capacity)
        let thread = Thread { pipeline.runConsumer(consume) }
        thread.name = "packd-export-writer"
        thread.start()
        let result: Result
        do {
            let (finale, produced) = try produce { batch in try pipeline.send(&batch) }
            result = produced
            pipeline.finish(finale)
        } catch {
            pipeline.abort()
            pipeline.waitForConsumer()
            // The producer stopped because the writer failed: the writer's error is the cause.
            if error is Stopped, let consumerError = pipeline.consumerFailure { throw consumerError }
            throw error
        }
        pipeline.waitForConsumer()
        if let consumerError = pipeline.consumerFailure { throw consumerError }
        return result
    }

    // MARK: Producer side

    /// Queues `batch` (waiting while the queue is full) and leaves an empty one in its place.
    private func send(_ batch: inout EncodedTileBatch) throws {
        guard !batch.isEmpty else { return }
        condition.lock()
        defer { condition.unlock() }
        while queued.count >= capacity && consumerError == nil && !consumerDone { condition.wait() }
        guard consumerError == nil, !consumerDone else { throw Stopped() }
        queued.append(batch)
        batch = spare.popLast() ?? EncodedTileBatch()
        condition.broadcast()
    }

    private func finish(_ finale: Finale) {
        condition.lock()
        self.finale = finale
        condition.broadcast()
        condition.unlock()
    }

    private func abort() {
        condition.lock()
        producerFailed = true
        condition.broadcast()
        condition.unlock()
    }

    private func waitForConsumer() {
        condition.lock()
        while !consumerDone { condition.wait() }
        condition.unlock()
    }

    private var consumerFailure: (any Error)? {
        condition.lock()
        defer { condition.unlock() }
        return consumerError
    }

    // MARK: Consumer side

    private func runConsumer(_ consume: (_ next: () throws -> Delivery) throws -> Void) {
        var current: EncodedTileBatch?
        do {
            try consume {
                if var done = current {
                    done.removeAll()
                    condition.lock()
                    spare.append(done)
                    condition.unlock()
                    current = nil
                }
                let delivery = try next()
                if case .batch(let batch) = delivery { current = batch }
                return delivery
            }
        } catch {
            condition.lock()
            if !(error is Stopped) { consumerError = error }
            condition.unlock()
        }
        condition.lock()
        consumerDone = true
        condition.broadcast()
        condition.unlock()
    }

    /// The next batch, or the finale once the producer finished and the queue is drained.
    private func next() throws -> Delivery {
        condition.lock()
        defer { condition.unlock() }
        while queued.isEmpty && finale == nil && !producerFailed { condition.wait() }
        if producerFailed { throw Stopped() }
        if !queued.isEmpty {
            condition.broadcast()
            return .batch(queued.removeFirst())
        }
        guard let finale else { throw Stopped() }
        return .finished(finale)
    }
}
