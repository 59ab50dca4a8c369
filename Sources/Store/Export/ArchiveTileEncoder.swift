import Packs
import TileFormats

/// Turns stored tile rows (MapLibre's `data` + `compressed`) into the bytes an archive stores:
/// vector tiles as gzip members, images as they are. A zlib row becomes gzip by re-wrapping its
/// deflate stream (inflate once for the CRC-32, never deflate again); only rows stored raw are
/// compressed. Collects the vector layers on the way, from the bytes it inflated anyway.
final class ArchiveTileEncoder {
    /// The largest tile accepted once inflated: far above any real tile, low enough that a
    /// hostile row cannot exhaust memory.
    static let inflatedTileLimit = 64 << 20

    private let zlib = Inflater(.zlib)
    private let deflate = Inflater(.raw)
    private let gzip = Inflater(.gzip)
    private let collectsLayers: Bool
    private var repeated = RepeatedTileCache()
    /// The gzip member of the current tile, reused from tile to tile.
    private var member: [UInt8] = []
    /// Fixed by the first tile: a tileset has one format.
    private(set) var format: TileFormat?
    private(set) var layers = VectorTileLayers()
    /// Vector tiles whose protobuf could not be read for `vector_layers` (exported regardless).
    private(set) var unreadableVectorTiles = 0

    init(collectsLayers: Bool) {
        self.collectsLayers = collectsLayers
    }

    /// Encodes one row and lends the archive bytes to `body`.
    func encode(data: UnsafeRawBufferPointer, compressed: Bool, z: Int64, x: Int64, y: Int64,
                _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard compressed else {
            return try encode(plain: data, stored: data, compressed: false, z: z, body)
        }
        // Only once the format is fixed: the first tile decides how every later one is encoded.
        let lookup = format == nil ? (entry: nil, wantsEntry: false) : repeated.lookUp(data, z: z)
        if let entry = lookup.entry {
            if entry.unreadable { unreadableVectorTiles += 1 }
            return try entry.encoded.withUnsafeBytes(body)
        }
        let unreadableBefore = unreadableVectorTiles
        func keeping(_ bytes: UnsafeRawBufferPointer) throws {
            if lookup.wantsEntry {
                repeated.keep(stored: data, encoded: bytes, z: z, unreadable: unreadableVectorTiles > unreadableBefore)
            }
            try body(bytes)
        }
        // The deflate payload alone is inflated: the gzip trailer needs a CRC-32 of the output
        // anyway, and skipping the Adler-32 check saves a pass over every tile. A header zlib
        // would reject (or a preset dictionary) takes the checked path and fails there.
        let inflater = Gzip.hasPlainZlibHeader(data) ? deflate : zlib
        let input = inflater === deflate ? UnsafeRawBufferPointer(rebasing: data[2..<(data.count - 4)]) : data
        do {
            try inflater.inflate(input, limit: Self.inflatedTileLimit)
        } catch {
            throw ExportError.invalidTile(z: z, x: x, y: y, reason: "stored zlib data: \(error)")
        }
        try inflater.output.withUnsafeBytes { raw in
            try encode(plain: UnsafeRawBufferPointer(rebasing: raw[0..<inflater.count]), stored: data, compressed: true, z: z, keeping)
        }
    }

    /// `plain` is the tile as served (inflated if the row was zlib), `stored` the row's bytes.
    private func encode(plain: UnsafeRawBufferPointer, stored: UnsafeRawBufferPointer, compressed: Bool, z: Int64,
                        _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let isGzip = ZlibCodec.isGzip(plain)
        let format = self.format ?? (isGzip ? .mvt : TileFormat(sniffing: plain))
        self.format = format
        guard format.isVector else {
            try body(plain)
            return
        }
        if collectsLayers { collectLayers(plain, isGzip: isGzip, z: z) }
        if isGzip {
            try body(plain)
        } else if compressed, Gzip.rewrap(zlib: stored, inflated: plain, into: &member) {
            try member.withUnsafeBytes(body)
        } else {
            try Gzip.compress(plain).withUnsafeBytes(body)
        }
    }

    private func collectLayers(_ plain: UnsafeRawBufferPointer, isGzip: Bool, z: Int64) {
        do {
            if isGzip {
                try gzip.inflate(plain, limit: Self.inflatedTileLimit)
                try gzip.output.withUnsafeBytes { raw throws in
                    try layers.add(tile: UnsafeRawBufferPointer(rebasing: raw[0..<gzip.count]), zoom: Int(z))
                }
            } else {
                try layers.add(tile: plain, zoom: Int(z))
            }
        } catch {
            unreadableVectorTiles += 1
        }
    }
}

/// What the archive writer needs from the encoder once every tile went through it.
struct EncodedTileSet: Sendable {
    let format: TileFormat
    let layers: VectorTileLayers
}

extension ArchiveTileEncoder {
    var encodedTileSet: EncodedTileSet { EncodedTileSet(format: format ?? .mvt, layers: layers) }
}
