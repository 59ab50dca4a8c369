import Foundation
import Packs
import Store

/// The scheduler's read connection, used from the thread pool only (serialised by the lock).
final class PackRecordReader: @unchecked Sendable {
    private let lock = NSLock()
    private let reader: StoreReader

    init(path: String) throws {
        reader = try StoreReader(path: path)
    }

    /// The stored record of a pack (nil if the pack is gone), or why it could not be read — which
    /// is not "gone": the pack is still there, `queued` or `active`, and must not be dropped silently.
    func record(_ packID: Int64) -> Result<PackRecord?, any Error> {
        lock.withLock { Result { try reader.pack(packID) } }
    }

    /// Packs to continue after a restart: `active` first (they were running), then `queued`, each
    /// in creation order; all of them or why not (a partial list would strand the rest).
    func resumableIDs() -> Result<[Int64], any Error> {
        lock.withLock {
            Result {
                var ids: [Int64] = []
                for state in [PackState.active, .queued] {
                    var after: Int64 = 0
                    while true {
                        let page = try reader.packs(after: after, state: state, limit: 500)
                        guard let last = page.last else { break }
                        ids += page.map(\.id)
                        after = last.id
                    }
                }
                return ids
            }
        }
    }
}
