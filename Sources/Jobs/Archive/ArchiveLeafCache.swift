import TileFormats

/// Where a leaf directory lies in its archive's leaf section.
struct ArchiveLeafKey: Hashable, Sendable {
    let offset: UInt64
    let length: UInt32
}

/// The decoded leaf directories of one archive a job has read, least recently used dropped
/// first once they hold more than `capacity` entries (a planet's leaves are hundreds of
/// megabytes; a region needs a few, and reading tiles band by band uses each for a while).
/// Loop thread (a copy goes to the pool for a lookup).
struct ArchiveLeafCache: Sendable {
    let capacity: Int
    private(set) var leaves: [ArchiveLeafKey: [PMTilesEntry]] = [:]
    private var lastUse: [ArchiveLeafKey: UInt64] = [:]
    private var clock: UInt64 = 0
    private(set) var entryCount = 0
    /// Leaves decoded into the cache, and of those read again after being dropped.
    private(set) var fetched = 0
    private(set) var refetched = 0
    private var dropped: Set<ArchiveLeafKey> = []

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    subscript(_ key: ArchiveLeafKey) -> [PMTilesEntry]? { leaves[key] }

    /// Marks leaves as just used (a lookup read them).
    mutating func touch(_ keys: some Sequence<ArchiveLeafKey>) {
        for key in keys where leaves[key] != nil {
            clock += 1
            lastUse[key] = clock
        }
    }

    /// Adds a leaf, then drops the least recently used others while over capacity (the new one
    /// stays even alone above it: a lookup is waiting for it).
    mutating func insert(_ entries: [PMTilesEntry], for key: ArchiveLeafKey) {
        guard leaves[key] == nil else { return touch([key]) }
        fetched += 1
        if dropped.remove(key) != nil { refetched += 1 }
        leaves[key] = entries
        entryCount += entries.count
        touch([key])
        while entryCount > capacity, leaves.count > 1,
              let oldest = lastUse.filter({ $0.key != key }).min(by: { $0.value < $1.value })?.key {
            entryCount -= leaves.removeValue(forKey: oldest)?.count ?? 0
            lastUse[oldest] = nil
            dropped.insert(oldest)
        }
    }
}
