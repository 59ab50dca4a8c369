import Foundation
import Store

/// The download's own read connection, used from the thread pool only (one query at a time per
/// pack, serialised by the lock), to skip what a pack already stored before a restart and to
/// find what another pack or the ambient cache holds fresh (linked on the writer, not fetched).
final class StoredResourceLookup: @unchecked Sendable {
    private let lock = NSLock()
    private let reader: StoreReader

    init(path: String) throws {
        reader = try StoreReader(path: path)
    }

    /// The band's window: tiles this pack links (skip) and fresh tiles stored elsewhere (link).
    func tileWindow(packID: Int64, urlTemplate: String, pixelRatio: Int64, z: Int64,
                    xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>, now: Int64) -> StoredTileWindow? {
        lock.withLock {
            try? reader.tileWindow(packID: packID, urlTemplate: urlTemplate, pixelRatio: pixelRatio, z: z,
                                   xRange: xRange, yRange: yRange, now: now)
        }
    }

    func storedURLs(packID: Int64) -> Set<String> {
        lock.withLock { (try? reader.storedResourceURLs(packID: packID)) ?? [] }
    }
}
