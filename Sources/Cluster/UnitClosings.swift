import Loop
import PostgresStore
import WorkSharing

/// A finished unit's closing write (its completion, a glyph choice's record), committed however
/// long the database takes to answer again: the unit stays held meanwhile — the heartbeat renews
/// its lease, so no other node downloads again what it stored — and the write is tried again after
/// a pause that grows, until it commits, the node no longer holds the unit (fenced, taken over,
/// stopped: `cancel`) or `maximumAttempts` failed (the unit is then given back; the next claimer
/// skips what is stored).
///
/// One attempt used to be all: a completion meeting a broken connection (PostgreSQL restarted)
/// gave a finished unit back, another node claimed it and — its own lookups failing on
/// connections the restart had broken — downloaded all of it again, with no node fenced.
/// Loop thread only.
final class UnitClosings {
    /// A failed attempt, tried again.
    var onError: ((String, any Error) -> Void)?

    private let loop: EventLoop
    private let store: PostgresStore
    /// The units being closed, each with the timer of its next attempt.
    private var pending: [WorkUnitLeases.Key: LoopTimer] = [:]

    /// About a minute of attempts before the unit is given back.
    static let maximumAttempts = 40

    init(loop: EventLoop, store: PostgresStore) {
        self.loop = loop
        self.store = store
    }

    /// Commits `operation` for `key`; `then` gets its result once it committed, or nil when the
    /// attempts ran out. Nothing after `cancel`.
    func close<T: Sendable>(_ key: WorkUnitLeases.Key, what: String,
                            _ operation: @escaping @Sendable (PostgresStoreConnection) throws -> T,
                            then: @escaping (T?) -> Void) {
        loop.assertInLoopThread()
        pending[key]?.close()
        pending[key] = LoopTimer(loop: loop)
        attempt(key, what: what, operation, number: 1, then: then)
    }

    /// Whether `key` was being closed; it is not any more (nothing more is reported).
    @discardableResult
    func cancel(_ key: WorkUnitLeases.Key) -> Bool {
        guard let timer = pending.removeValue(forKey: key) else { return false }
        timer.close()
        return true
    }

    /// The units being closed, now none.
    func cancelAll() -> [WorkUnitLeases.Key] {
        let keys = Array(pending.keys)
        for key in keys { cancel(key) }
        return keys
    }

    private func attempt<T: Sendable>(_ key: WorkUnitLeases.Key, what: String,
                                      _ operation: @escaping @Sendable (PostgresStoreConnection) throws -> T,
                                      number: Int, then: @escaping (T?) -> Void) {
        store.writeCluster(operation) { [weak self] result in
            guard let self, let timer = pending[key] else { return }
            switch result {
            case .success(let value):
                cancel(key)
                then(value)
            case .failure(let error):
                guard number < Self.maximumAttempts else {
                    onError?("\(what) (attempt \(number), given up: the unit is given back)", error)
                    cancel(key)
                    return then(nil)
                }
                onError?("\(what) (attempt \(number), tried again)", error)
                let pause = min(2000, 50 << min(number, 6))
                timer.start(after: UInt64(pause)) { [weak self] in
                    self?.attempt(key, what: what, operation, number: number + 1, then: then)
                }
            }
        }
    }
}
