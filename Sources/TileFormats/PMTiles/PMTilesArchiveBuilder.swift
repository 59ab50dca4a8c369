import Foundation

/// Writes a whole PMTiles v3 archive in memory, laid out as the reference writer (the `pmtiles`
/// Python package) lays it out: header, root directory, metadata, leaf directories, tile data.
/// Identical tile contents are stored once and consecutive ids with the same content become one
/// run. Tile data is written in the order the tiles are given: ascending ids make a clustered
/// archive, any other order an unclustered one (the `clustered` flag says which). For archives
/// a test or a benchmark serves; exports stream with the store's `PMTilesWriter` instead.
public struct PMTilesArchiveBuilder {
    public struct Tile: Sendable {
        public var z: Int
        public var x: Int
        public var y: Int
        /// The tile as a reader returns it after undoing `tileCompression`.
        public var bytes: [UInt8]

        public init(z: Int, x: Int, y: Int, bytes: [UInt8]) {
            self.z = z
            self.x = x
            self.y = y
            self.bytes = bytes
        }
    }

    public var tileType = PMTilesHeader.TileType.mvt
    /// gzip: tiles are gzipped here, as a reader's caller must undo (`none`: stored as given).
    public var tileCompression = PMTilesHeader.Compression.gzip
    public var internalCompression = PMTilesHeader.Compression.gzip
    public var metadata: [String: Any] = [:]
    /// Root directories larger than this are split into leaves (the spec's first 16 KiB, less
    /// the header); smaller values force leaf directories on small archives.
    public var rootLimit = PMTilesHeader.rootFetchSize - PMTilesHeader.size
    public var initialLeafSize = 4096
    public var bounds: (west: Double, south: Double, east: Double, north: Double) = (-180, -85.051129, 180, 85.051129)
    public var center: (longitude: Double, latitude: Double, zoom: Int) = (0, 0, 0)

    public init() {}

    /// The archive of `tiles` (at most one per z/x/y). Tiles outside their zoom's grid are skipped.
    public func build(_ tiles: [Tile]) -> [UInt8] {
        var entries: [PMTilesEntry] = []
        var data: [UInt8] = []
        var offsets: [[UInt8]: UInt64] = [:]
        var clustered = true
        var lastID: UInt64?
        var zooms: (min: Int, max: Int)?
        for tile in tiles {
            guard let id = HilbertTileID.encode(z: tile.z, x: tile.x, y: tile.y) else { continue }
            if let lastID, id < lastID { clustered = false }
            lastID = id
            zooms = (min(zooms?.min ?? tile.z, tile.z), max(zooms?.max ?? tile.z, tile.z))
            let stored = tileCompression == .gzip ? Gzip.compress(tile.bytes) : tile.bytes
            let offset: UInt64
            if let known = offsets[stored] {
                offset = known
            } else {
                offset = UInt64(data.count)
                offsets[stored] = offset
                data += stored
            }
            entries.append(PMTilesEntry(tileID: id, offset: offset, length: UInt32(stored.count), runLength: 1))
        }
        entries.sort { $0.tileID < $1.tileID }
        var runs: [PMTilesEntry] = []
        for entry in entries {
            if var last = runs.last, last.offset == entry.offset, last.length == entry.length,
               entry.tileID == last.tileID + UInt64(last.runLength) {
                last.runLength += 1
                runs[runs.count - 1] = last
            } else {
                runs.append(entry)
            }
        }
        let layout = PMTilesDirectoryLayout(entries: runs, rootLimit: rootLimit, initialLeafSize: initialLeafSize,
                                            compression: internalCompression)
        let metadataJSON = (try? JSONSerialization.data(withJSONObject: metadata, options: [.sortedKeys])) ?? Data("{}".utf8)
        let storedMetadata = internalCompression == .gzip ? Gzip.compress(Array(metadataJSON)) : Array(metadataJSON)
        var header = PMTilesHeader()
        header.rootOffset = UInt64(PMTilesHeader.size)
        header.rootLength = UInt64(layout.root.count)
        header.metadataOffset = header.rootOffset + header.rootLength
        header.metadataLength = UInt64(storedMetadata.count)
        header.leafDirectoriesOffset = header.metadataOffset + header.metadataLength
        header.leafDirectoriesLength = UInt64(layout.leaves.count)
        header.tileDataOffset = header.leafDirectoriesOffset + header.leafDirectoriesLength
        header.tileDataLength = UInt64(data.count)
        header.addressedTilesCount = UInt64(entries.count)
        header.tileEntriesCount = UInt64(runs.count)
        header.tileContentsCount = UInt64(offsets.count)
        header.clustered = clustered
        header.internalCompression = internalCompression
        header.tileCompression = tileCompression
        header.tileType = tileType
        header.minZoom = UInt8(zooms?.min ?? 0)
        header.maxZoom = UInt8(zooms?.max ?? 0)
        header.minLonE7 = Int32((bounds.west * 1e7).rounded())
        header.minLatE7 = Int32((bounds.south * 1e7).rounded())
        header.maxLonE7 = Int32((bounds.east * 1e7).rounded())
        header.maxLatE7 = Int32((bounds.north * 1e7).rounded())
        header.centerZoom = UInt8(clamping: center.zoom)
        header.centerLonE7 = Int32((center.longitude * 1e7).rounded())
        header.centerLatE7 = Int32((center.latitude * 1e7).rounded())
        return header.encoded() + layout.root + storedMetadata + layout.leaves + data
    }
}
