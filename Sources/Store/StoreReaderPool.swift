import Foundation
import Packs

/// Read-only connections for the thread pool. A `StoreReader` is not thread-safe, so each read
/// checks one out for its duration; connections are opened on demand (at most one per
/// concurrently running pool thread) and kept for reuse until `close()`.
public final class StoreReaderPool: @unchecked Sendable {
    private let path: String
    private let onAccess: (@Sendable (ResourceKey, Int64) -> Void)?
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var idle: [StoreReader] = []
    /// Checked out now, keyed by identity (for `close()` to interrupt them).
    private var inUse: [ObjectIdentifier: StoreReader] = [:]
    /// Readers being opened (counted so that `close()` waits for them too).
    private var opening = 0
    private var closed = false

    public init(path: String, onAccess: (@Sendable (ResourceKey, Int64) -> Void)?) {
        self.path = path
        self.onAccess = onAccess
    }

    /// Runs `body` with a reader no other thread uses meanwhile. Call on a pool thread. Throws
    /// `closedError` once the pool is closed.
    public func withReader<T>(_ body: (StoreReader) throws -> T) throws -> T {
        let reader = try checkOut()
        defer { checkIn(reader) }
        return try body(reader)
    }

    /// What a read after `close()` throws.
    public static let closedError = StoreError(.other, "the store is closed")

    /// Closes every connection: no read starts from now on (each throws `closedError`); reads
    /// under way are interrupted (`Database.interrupt`: a statement running stops with
    /// `SQLITE_INTERRUPT`) and waited for; then each connection is closed (`Database.close`,
    /// `sqlite3_close_v2`). Idempotent. Not from inside `withReader`, which it would wait for.
    public func close() {
        condition.lock()
        closed = true
        for reader in inUse.values { reader.database.interrupt() }
        while !inUse.isEmpty || opening > 0 { condition.wait() }
        let readers = idle
        idle.removeAll()
        condition.unlock()
        for reader in readers { reader.database.close() }
    }

    private func checkOut() throws -> StoreReader {
        condition.lock()
        guard !closed else {
            condition.unlock()
            throw Self.closedError
        }
        if let reader = idle.popLast() {
            inUse[ObjectIdentifier(reader)] = reader
            condition.unlock()
            return reader
        }
        opening += 1
        condition.unlock()
        let opened = Result { try StoreReader(path: path, onAccess: onAccess) }
        condition.lock()
        defer { condition.unlock() }
        opening -= 1
        let reader: StoreReader
        switch opened {
        case .success(let opened): reader = opened
        case .failure(let error):
            condition.broadcast()
            throw error
        }
        guard !closed else {
            // Closed while it opened: `close()` is waiting to close it with the others.
            idle.append(reader)
            condition.broadcast()
            throw Self.closedError
        }
        inUse[ObjectIdentifier(reader)] = reader
        return reader
    }

    private func checkIn(_ reader: StoreReader) {
        condition.lock()
        inUse[ObjectIdentifier(reader)] = nil
        // A pool closed meanwhile is waiting for this reader: it is put back for `close()`.
        idle.append(reader)
        if closed { condition.broadcast() }
        condition.unlock()
    }
}
