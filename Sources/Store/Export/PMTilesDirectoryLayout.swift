import TileFormats

/// Splits directory entries into a root directory that fits the first 16 KiB with the header and,
/// when needed, leaf directories of `leafSize` entries each (doubling from 4,096 until the root
/// fits), as the reference writer's `optimize_directories` does.
struct PMTilesDirectoryLayout {
    let root: [UInt8]
    let leaves: [UInt8]
    let leafCount: Int

    init(entries: [PMTilesEntry], rootLimit: Int = PMTilesHeader.rootFetchSize - PMTilesHeader.size) {
        let whole = PMTilesDirectory.encode(entries[...])
        if whole.count <= rootLimit {
            root = whole
            leaves = []
            leafCount = 0
            return
        }
        var leafSize = 4096
        while true {
            var rootEntries: [PMTilesEntry] = []
            var leaves: [UInt8] = []
            var start = 0
            while start < entries.count {
                let end = min(start + leafSize, entries.count)
                let leaf = PMTilesDirectory.encode(entries[start..<end])
                rootEntries.append(PMTilesEntry(tileID: entries[start].tileID, offset: UInt64(leaves.count),
                                                length: UInt32(leaf.count), runLength: 0))
                leaves += leaf
                start = end
            }
            let root = PMTilesDirectory.encode(rootEntries[...])
            if root.count <= rootLimit {
                self.root = root
                self.leaves = leaves
                self.leafCount = rootEntries.count
                return
            }
            leafSize *= 2
        }
    }
}
