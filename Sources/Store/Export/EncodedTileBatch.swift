import TileFormats

/// Archive-ready tiles handed from the encoding thread to the writing thread in one piece: one
/// hand-off (a lock round trip) per few dozen tiles instead of per tile, and one reusable byte
/// buffer instead of an array per tile.
struct EncodedTileBatch: Sendable {
    struct Tile: Sendable {
        let z: Int64
        let x: Int64
        let y: Int64
        /// The PMTiles (Hilbert) id; 0 where the archive does not use it.
        let tileID: UInt64
        /// A CRC-32 of the content if the encoder knows one (see `PMTilesWriter.append`).
        let checksum: UInt32?
        fileprivate let range: Range<Int>
    }

    /// Enough tiles to amortise the hand-off, few enough that two batches in flight stay small.
    static let targetBytes = 512 * 1024

    private(set) var tiles: [Tile] = []
    private var bytes: [UInt8] = []

    var isFull: Bool { bytes.count >= Self.targetBytes }
    var isEmpty: Bool { tiles.isEmpty }

    mutating func append(z: Int64, x: Int64, y: Int64, tileID: UInt64 = 0, checksum: UInt32?, bytes tile: UnsafeRawBufferPointer) {
        let start = bytes.count
        bytes.append(contentsOf: tile)
        tiles.append(Tile(z: z, x: x, y: y, tileID: tileID, checksum: checksum, range: start..<bytes.count))
    }

    /// Empties the batch, keeping its buffers for the next round.
    mutating func removeAll() {
        tiles.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
    }

    func forEach(_ body: (Tile, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { raw in
            for tile in tiles {
                try body(tile, UnsafeRawBufferPointer(rebasing: raw[tile.range]))
            }
        }
    }
}
