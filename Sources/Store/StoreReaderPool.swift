import Foundation
import Packs

/// Read-only connections for the thread pool. A `StoreReader` is not thread-safe, so each read
/// checks one out for its duration; connections are opened on demand (at most one per
/// concurrently running pool thread) and kept for reuse.
public final class StoreReaderPool: @unchecked Sendable {
    private let path: String
    private let onAccess: (@Sendable (ResourceKey, Int64) -> Void)?
    private let lock = NSLock()
    // Guarded by `lock`.
    private var idle: [StoreReader] = []

    public init(path: String, onAccess: (@Sendable (ResourceKey, Int64) -> Void)?) {
        self.path = path
        self.onAccess = onAccess
    }

    /// Runs `body` with a reader no other thread uses meanwhile. Call on a pool thread.
    public func withReader<T>(_ body: (StoreReader) throws -> T) throws -> T {
        let reader = try checkOut()
        defer { checkIn(reader) }
        return try body(reader)
    }

    private func checkOut() throws -> StoreReader {
        lock.lock()
        if let reader = idle.popLast() {
            lock.unlock()
            return reader
        }
        lock.unlock()
        return try StoreReader(path: path, onAccess: onAccess)
    }

    private func checkIn(_ reader: StoreReader) {
        lock.lock()
        idle.append(reader)
        lock.unlock()
    }
}
