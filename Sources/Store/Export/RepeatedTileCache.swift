#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Encoded forms of tiles a pack stores again and again (the ocean, empty land at high zoom:
/// often most tiles of a pack), so the export inflates and scans such a tile a few times, not
/// thousands. A zlib row ends with the Adler-32 of its content, so (length, trailer) names a
/// candidate at no cost; a hit is confirmed byte for byte against the stored row. A tile is kept
/// on its second sighting only, so tiles seen once (most of them) cost one set insert.
struct RepeatedTileCache {
    struct Entry {
        let stored: [UInt8]
        let encoded: [UInt8]
        /// The zoom the tile's layers were counted at: at another zoom they must be counted
        /// again (the layer zoom ranges), so the entry does not apply there.
        var zoom: Int64
        let unreadable: Bool
    }

    private struct Key: Hashable {
        let length: Int
        let trailer: UInt32
    }

    /// Bounds: entries are at most `maximumTileBytes` stored + encoded, so the cache holds a few
    /// MiB at worst; `seen` is cleared when full (16 bytes a key).
    static let maximumEntries = 64
    static let maximumTileBytes = 128 * 1024
    static let maximumSeen = 1 << 20

    private var seen: Set<Key> = []
    private var entries: [Key: Entry] = [:]

    /// The entry for `stored` at zoom `z`, if one was kept for exactly these bytes and zoom.
    /// Records the sighting otherwise; `wantsEntry` then tells whether `keep` should follow.
    mutating func lookUp(_ stored: UnsafeRawBufferPointer, z: Int64) -> (entry: Entry?, wantsEntry: Bool) {
        guard let key = Self.key(stored) else { return (nil, false) }
        if let entry = entries[key] {
            // memcmp: the generic elementsEqual compares byte by byte, 1.5% of an export.
            let same = entry.stored.count == stored.count && entry.stored.withUnsafeBytes {
                memcmp($0.baseAddress!, stored.baseAddress!, stored.count) == 0
            }
            return same && entry.zoom == z ? (entry, false) : (nil, same)
        }
        if seen.contains(key) { return (nil, true) }
        if seen.count >= Self.maximumSeen { seen.removeAll(keepingCapacity: true) }
        seen.insert(key)
        return (nil, false)
    }

    mutating func keep(stored: UnsafeRawBufferPointer, encoded: UnsafeRawBufferPointer, z: Int64, unreadable: Bool) {
        guard let key = Self.key(stored), stored.count + encoded.count <= Self.maximumTileBytes else { return }
        if entries[key] == nil, entries.count >= Self.maximumEntries { entries.removeAll(keepingCapacity: true) }
        entries[key] = Entry(stored: Array(stored), encoded: Array(encoded), zoom: z, unreadable: unreadable)
    }

    private static func key(_ stored: UnsafeRawBufferPointer) -> Key? {
        guard stored.count >= 6 else { return nil }
        let at = stored.count - 4
        let trailer = UInt32(stored[at]) << 24 | UInt32(stored[at + 1]) << 16 | UInt32(stored[at + 2]) << 8 | UInt32(stored[at + 3])
        return Key(length: stored.count, trailer: trailer)
    }
}
