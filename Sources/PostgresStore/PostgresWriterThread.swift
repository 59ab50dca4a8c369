import Foundation
import Packs
import Postgres
import Store

/// The one thread of a node that writes the cluster database, on its own blocking connection
/// (blocking libpq on a dedicated thread, chosen by measurement: see `PostgresConnectionThread`).
/// It batches exactly as SQLite mode's `WriterThread` does — by count, by time, or at `flush`,
/// each batch ONE transaction with the operations riding it — and reports each outcome through
/// `onCommit`. A batch that loses a deadlock or a serialization conflict to another node, or
/// whose connection broke, is applied again from the start (on a new connection) before it is
/// reported as failed — while the database is unreachable, for `outageTolerance`: a database
/// restart or a failover costs a pause, not failed packs.
final class PostgresWriterThread: @unchecked Sendable {
    struct Configuration: Sendable {
        var maximumBatchCount: Int
        var maximumBatchDelay: Duration
        /// Attempts of one batch when the connection breaks or a conflict aborts it.
        var maximumAttempts: Int
        /// How long a batch keeps being tried while the database cannot be reached (a restart
        /// replays its log for seconds after a crash), whatever `maximumAttempts` says.
        var outageTolerance: Duration

        init(maximumBatchCount: Int = 256, maximumBatchDelay: Duration = .milliseconds(50), maximumAttempts: Int = 6,
             outageTolerance: Duration = .seconds(30)) {
            self.maximumBatchCount = max(1, maximumBatchCount)
            self.maximumBatchDelay = maximumBatchDelay
            self.maximumAttempts = max(1, maximumAttempts)
            self.outageTolerance = outageTolerance
        }
    }

    /// One fact riding a batch: `apply` runs inside the batch's transaction (again, if the batch
    /// is retried), `finish` once after the batch committed (nil) or failed for good.
    struct BatchOperation: @unchecked Sendable {
        let apply: (PostgresStoreConnection) -> Void
        let finish: (StoreError?) -> Void
        /// false: writes nothing a pack document shows (the event log).
        let changesPacks: Bool
    }

    private enum Item {
        case write(ResourceWrite)
        case inBatch(BatchOperation)
        case flush(@Sendable () -> Void)
        case afterCommit(@Sendable () -> Void)
        case operation(run: (PostgresStoreConnection?, (any Error)?) -> Void)
    }

    typealias Connect = @Sendable () throws -> PostgresStoreConnection

    /// The error operations complete with once the writer has stopped.
    struct Stopped: Error, CustomStringConvertible {
        var description: String { "the writer has stopped" }
    }

    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: [Item] = []
    private var touches = AccessTouches()
    private var touchDeadline: Date?
    private var writerIsWaiting = false
    private var stopping = false
    private var stopped = false
    private var queuedWrites = 0

    private let configuration: Configuration
    private let clock: WallClock
    private let connect: Connect
    private let onCommit: @Sendable (BatchOutcome) -> Void
    /// Writer thread only.
    private var connection: PostgresStoreConnection?
    private var commitWaiters: [@Sendable () -> Void] = []
    private var batchOperations: [BatchOperation] = []
    private let finished = NSCondition()
    private var hasFinished = false
    private let changesLock = NSLock()
    private var changes: UInt64 = 0

    /// `connection` is the writer's first connection (made by the caller, so a failure to
    /// connect is the caller's error); `connect` makes the next one after it broke.
    init(connection: PostgresStoreConnection, connect: @escaping Connect, configuration: Configuration, clock: WallClock,
         onCommit: @escaping @Sendable (BatchOutcome) -> Void) {
        self.connection = connection
        self.connect = connect
        self.configuration = configuration
        self.clock = clock
        self.onCommit = onCommit
        let thread = Thread { self.run() }
        thread.name = "packd-pg-writer"
        thread.stackSize = 8 << 20
        thread.start()
    }

    func submit(contentsOf writes: [ResourceWrite]) {
        condition.lock()
        guard !stopped else { return condition.unlock() }
        queue.append(contentsOf: writes.map { .write($0) })
        queuedWrites += writes.count
        wakeWriterLocked()
        condition.unlock()
    }

    func flush(_ completion: @escaping @Sendable () -> Void) {
        enqueue(.flush(completion), countsAsWrite: false)
    }

    func whenCommitted(_ completion: @escaping @Sendable () -> Void) {
        enqueue(.afterCommit(completion), countsAsWrite: false)
    }

    func inBatch(_ operation: BatchOperation) {
        enqueue(.inBatch(operation), countsAsWrite: false)
    }

    /// Runs `operation` after the writes submitted before it are committed, outside any batch
    /// (each store method it calls is its own transaction).
    func perform<T>(_ operation: @escaping (PostgresStoreConnection) throws -> T, changesPacks: Bool,
                    completion: @escaping (Result<T, any Error>) -> Void) {
        let changes = LoopBoundless((operation, completion))
        enqueue(.operation(run: { [self] connection, failure in
            let (operation, completion) = changes.value
            guard let connection else { return completion(.failure(failure ?? Stopped())) }
            let result = Result { try operation(connection) }
            if changesPacks {
                // Other nodes' caches learn of it; a failed notify changes nothing stored.
                try? connection.notifyCommit()
                countChange()
            }
            completion(result)
        }), countsAsWrite: false)
    }

    var committedChanges: UInt64 { changesLock.withLock { changes } }

    private func countChange() {
        changesLock.withLock { changes &+= 1 }
    }

    func touch(tileID: Int64? = nil, resourceID: Int64? = nil) {
        condition.lock()
        let first = touches.isEmpty
        if let tileID { touches.tileIDs.insert(tileID) }
        if let resourceID { touches.resourceIDs.insert(resourceID) }
        if first && !touches.isEmpty {
            touchDeadline = Date().addingTimeInterval(batchDelaySeconds)
            wakeWriterLocked()
        }
        condition.unlock()
    }

    var pendingWrites: Int {
        condition.lock()
        defer { condition.unlock() }
        return queuedWrites
    }

    /// Commits what is queued, stops the thread and waits for it. Idempotent.
    func stop() {
        condition.lock()
        stopping = true
        wakeWriterLocked()
        condition.unlock()
        finished.lock()
        while !hasFinished { finished.wait() }
        finished.unlock()
    }

    private func wakeWriterLocked() {
        if writerIsWaiting { condition.signal() }
    }

    private func enqueue(_ item: Item, countsAsWrite: Bool) {
        condition.lock()
        if stopped {
            condition.unlock()
            switch item {
            case .write: break
            case .inBatch(let operation): operation.finish(StoreError(.other, "the writer has stopped"))
            case .flush(let completion), .afterCommit(let completion): completion()
            case .operation(let run): run(nil, Stopped())
            }
            return
        }
        queue.append(item)
        if countsAsWrite { queuedWrites += 1 }
        wakeWriterLocked()
        condition.unlock()
    }

    private var batchDelaySeconds: Double {
        Double(configuration.maximumBatchDelay.components.seconds)
            + Double(configuration.maximumBatchDelay.components.attoseconds) / 1e18
    }

    // MARK: The writer loop

    private func run() {
        var batch: [ResourceWrite] = []
        batch.reserveCapacity(configuration.maximumBatchCount)
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
            let items = queue
            queue.removeAll(keepingCapacity: true)
            queuedWrites = 0
            let shouldStop = stopping && items.isEmpty
            if shouldStop { stopped = true }
            condition.unlock()

            for item in items {
                switch item {
                case .write(let write):
                    if batchDeadline == nil { batchDeadline = Date().addingTimeInterval(delay) }
                    batch.append(write)
                    if batch.count >= configuration.maximumBatchCount {
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
                case .operation(let run):
                    commit(&batch)
                    batchDeadline = nil
                    do {
                        run(try usableConnection(), nil)
                    } catch {
                        run(nil, error)
                    }
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
        connection = nil
        finished.lock()
        hasFinished = true
        finished.broadcast()
        finished.unlock()
    }

    /// The connection, made again if it broke.
    private func usableConnection() throws -> PostgresStoreConnection {
        if let connection, connection.connection.isUsable { return connection }
        connection = nil
        let fresh = try connect()
        connection = fresh
        return fresh
    }

    private func takeTouches() -> AccessTouches {
        condition.lock()
        defer { condition.unlock() }
        let taken = touches
        touches = AccessTouches()
        return taken
    }

    private func commit(_ batch: inout [ResourceWrite]) {
        guard !batch.isEmpty || !batchOperations.isEmpty else { return }
        let pendingTouches = takeTouches()
        let started = ContinuousClock.now
        let operations = batchOperations
        batchOperations.removeAll(keepingCapacity: true)
        let changedPacks = !batch.isEmpty || operations.contains(where: \.changesPacks)
        var outcome = apply(batch, operations: operations, touches: pendingTouches, changesPacks: changedPacks)
        outcome.duration = started.duration(to: .now)
        outcome.committedWrites = batch.count
        batch.removeAll(keepingCapacity: true)
        if changedPacks { countChange() }
        if outcome.committedWrites > 0 || outcome.error != nil { onCommit(outcome) }
        for operation in operations { operation.finish(outcome.error) }
        let waiters = commitWaiters
        commitWaiters.removeAll(keepingCapacity: true)
        for waiter in waiters { waiter() }
    }

    /// One batch, applied again after a conflict or a broken connection (a fresh connection,
    /// after a short pause that grows) until it commits or the attempts run out.
    private func apply(_ batch: [ResourceWrite], operations: [BatchOperation], touches: AccessTouches,
                       changesPacks: Bool) -> BatchOutcome {
        var attempt = 0
        let started = ContinuousClock.now
        while true {
            attempt += 1
            do {
                return try usableConnection().applyBatch(batch, operations: operations.map(\.apply), now: clock.now,
                                                         touches: touches, changesPacks: changesPacks)
            } catch {
                let postgres = error as? PostgresError
                let unreachable = postgres?.isConnectionLost == true || connection?.connection.isUsable != true
                let retryable = unreachable || postgres?.isTransactionConflict == true
                let outageLeft = unreachable && started.duration(to: .now) < configuration.outageTolerance
                guard retryable, attempt < configuration.maximumAttempts || outageLeft else {
                    return PostgresStoreConnection.failedBatch(batch, error)
                }
                // A lost connection may still look usable to libpq: the next attempt opens a fresh one.
                if postgres?.isConnectionLost == true { connection = nil }
                Thread.sleep(forTimeInterval: min(2.0, 0.05 * Double(1 << min(attempt, 6))))
            }
        }
    }

    private func commitTouchesIfAny() {
        let pendingTouches = takeTouches()
        guard !pendingTouches.isEmpty else { return }
        let outcome = apply([], operations: [], touches: pendingTouches, changesPacks: false)
        if outcome.error != nil { onCommit(outcome) }
    }
}

/// Carries a non-Sendable value to the writer thread, which alone uses it.
struct LoopBoundless<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
