import Foundation
import Packs

/// The writer thread: takes the queue, cuts it into batches, hands each to the backend, marks
/// what changed and tells everyone waiting — in that order.
extension BatchingWriter {
    func run() {
        var batch: [ResourceWrite] = []
        batch.reserveCapacity(limits.maximumBatchCount)
        var batchDeadline: Date?
        let delay = batchDelaySeconds

        while true {
            condition.lock()
            while queue.isEmpty && !stopping {
                let deadline = [batchDeadline, touches.isEmpty ? nil : touchDeadline].compactMap { $0 }.min()
                writerIsWaiting = true
                defer { writerIsWaiting = false }
                if let deadline {
                    if !condition.wait(until: deadline) { break }
                } else {
                    condition.wait()
                }
            }
            let items = takeQueueLocked()
            let shouldStop = stopping && items.isEmpty
            if shouldStop { stopped = true }
            condition.unlock()

            for item in items {
                switch item {
                case .write(let write):
                    if batchDeadline == nil { batchDeadline = Date().addingTimeInterval(delay) }
                    batch.append(write)
                    if batch.count >= limits.maximumBatchCount {
                        commit(&batch)
                        batchDeadline = nil
                    }
                case .inBatch(let operation):
                    if batchDeadline == nil { batchDeadline = Date().addingTimeInterval(delay) }
                    batchOperations.append(operation)
                case .flush(let completion):
                    commit(&batch)
                    batchDeadline = nil
                    completion()
                case .afterCommit(let completion):
                    if batch.isEmpty && batchOperations.isEmpty { completion() } else { commitWaiters.append(completion) }
                case .operation(let run, _):
                    commit(&batch)
                    batchDeadline = nil
                    run()
                }
            }
            if let deadline = batchDeadline, Date() >= deadline || shouldStop {
                commit(&batch)
                batchDeadline = nil
            } else if batch.isEmpty && batchOperations.isEmpty {
                commitTouchesIfAny()
            }
            if shouldStop {
                commit(&batch)
                break
            }
        }
        finishRunning()
    }

    private func takeTouches() -> AccessTouches {
        condition.lock()
        defer { condition.unlock() }
        let taken = touches
        touches = AccessTouches()
        return taken
    }

    /// Commits the batch's writes and the operations riding it (one transaction, as the backend
    /// applies it), marks the packs it changed, then tells `onCommit`, the operations and the
    /// waiters.
    private func commit(_ batch: inout [ResourceWrite]) {
        guard !batch.isEmpty || !batchOperations.isEmpty else { return }
        let started = ContinuousClock.now
        let operations = batchOperations
        batchOperations.removeAll(keepingCapacity: true)
        let changesPacks = !batch.isEmpty || operations.contains(where: \.changesPacks)
        var application = backend.apply(WriterBatch(writes: batch, operations: operations.map(\.apply), touches: takeTouches(),
                                                    changesPacks: changesPacks))
        application.outcome.duration = started.duration(to: .now)
        application.outcome.committedWrites = batch.count
        batch.removeAll(keepingCapacity: true)
        // Rolled-back rows are noted too: a pack marked for nothing only misses the cache once.
        if changesPacks || application.changedPacks?.isEmpty != true { countChange(packs: application.changedPacks) }
        let outcome = application.outcome
        if outcome.committedWrites > 0 || outcome.error != nil { onCommit(outcome) }
        for operation in operations { operation.finish(application.operationsError) }
        let waiters = commitWaiters
        commitWaiters.removeAll(keepingCapacity: true)
        for waiter in waiters { waiter() }
    }

    /// Access times alone, when no batch came to carry them within the batch delay.
    private func commitTouchesIfAny() {
        let pendingTouches = takeTouches()
        guard !pendingTouches.isEmpty else { return }
        let application = backend.apply(WriterBatch(writes: [], operations: [], touches: pendingTouches, changesPacks: false))
        if application.outcome.error != nil { onCommit(application.outcome) }
    }
}
