import Packs
import Server

/// Recently served offline resources, ready to send, so a map's repeated requests for the same
/// tiles (every viewer of a pack asks for the same few hundred) are answered on the loop without a
/// thread-pool round trip, a SQLite read and an inflate each. Loop thread only.
///
/// Bounded by bytes and by age: an entry older than `lifetime` is read again, so a pack that was
/// updated or removed is served as it now is at most that late (as `OfflinePackIndexCache`).
/// Eviction is first-in first-out, which for a working set that fits costs nothing and for one
/// that does not degrades to a plain read.
final class OfflineResponseCache {
    /// One representation: the pack, the row and whether it is the gzip one.
    struct Key: Hashable {
        let packID: Int64
        let row: ResourceKey
        let gzip: Bool
    }

    struct Entry {
        let headers: HTTPHeaders
        let etag: String
        let modified: Int64?
        /// nil: stored as "no content" (204).
        let body: [UInt8]?
        let expires: ContinuousClock.Instant

        var size: Int { (body?.count ?? 0) + 256 }
    }

    let lifetime: Duration
    let maximumBytes: Int
    /// Bodies larger than this are not kept (one big GeoJSON must not flush every tile).
    let maximumEntryBytes: Int
    private var entries: [Key: Entry] = [:]
    private var order: [Key] = []
    private var orderStart = 0
    private(set) var bytes = 0

    init(lifetime: Duration = .seconds(5), maximumBytes: Int = 32 << 20, maximumEntryBytes: Int = 1 << 20) {
        self.lifetime = lifetime
        self.maximumBytes = maximumBytes
        self.maximumEntryBytes = maximumEntryBytes
    }

    func entry(_ key: Key) -> Entry? {
        guard let entry = entries[key] else { return nil }
        guard entry.expires > .now else {
            remove(key)
            return nil
        }
        return entry
    }

    func insert(_ key: Key, headers: HTTPHeaders, etag: String, modified: Int64?, body: [UInt8]?) {
        guard maximumBytes > 0, (body?.count ?? 0) <= maximumEntryBytes else { return }
        remove(key)
        let entry = Entry(headers: headers, etag: etag, modified: modified, body: body, expires: .now + lifetime)
        while bytes + entry.size > maximumBytes, orderStart < order.count {
            let oldest = order[orderStart]
            orderStart += 1
            remove(oldest)
        }
        entries[key] = entry
        bytes += entry.size
        order.append(key)
        // Keys of removed entries stay in `order` until they reach the front; compact now and then.
        if orderStart > 1024, orderStart * 2 > order.count {
            order = order[orderStart...].filter { entries[$0] != nil }
            orderStart = 0
        }
    }

    /// Drops every response of `packID` (removed: it must not be served again).
    func removeAll(packID: Int64) {
        for key in entries.keys where key.packID == packID { remove(key) }
    }

    private func remove(_ key: Key) {
        guard let old = entries.removeValue(forKey: key) else { return }
        bytes -= old.size
    }
}
