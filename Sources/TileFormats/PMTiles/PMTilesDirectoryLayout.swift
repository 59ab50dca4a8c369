/// Splits directory entries into a root directory that fits the first 16 KiB with the header and,
/// when needed, leaf directories of `leafSize` entries each (doubling from `initialLeafSize`,
/// 4,096 like the reference writer's `optimize_directories`, until the root fits).
public struct PMTilesDirectoryLayout: Sendable {
    public let root: [UInt8]
    public let leaves: [UInt8]
    public let leafCount: Int

    /// `compression` is the archive's internal compression (gzip or none).
    public init(entries: [PMTilesEntry], rootLimit: Int = PMTilesHeader.rootFetchSize - PMTilesHeader.size,
                initialLeafSize: Int = 4096, compression: PMTilesHeader.Compression = .gzip) {
        let whole = PMTilesDirectory.encode(entries[...], compression: compression)
        if whole.count <= rootLimit {
            root = whole
            leaves = []
            leafCount = 0
            return
        }
        var leafSize = max(1, initialLeafSize)
        while true {
            var rootEntries: [PMTilesEntry] = []
            var leaves: [UInt8] = []
            var start = 0
            while start < entries.count {
                let end = min(start + leafSize, entries.count)
                let leaf = PMTilesDirectory.encode(entries[start..<end], compression: compression)
                rootEntries.append(PMTilesEntry(tileID: entries[start].tileID, offset: UInt64(leaves.count),
                                                length: UInt32(leaf.count), runLength: 0))
                leaves += leaf
                start = end
            }
            let root = PMTilesDirectory.encode(rootEntries[...], compression: compression)
            if root.count <= rootLimit || leafSize >= entries.count {
                self.root = root
                self.leaves = leaves
                self.leafCount = rootEntries.count
                return
            }
            leafSize *= 2
        }
    }
}
