import Foundation
import Packs
import Plan
@_spi(Fuzzing) import Store
import TileFormats

/// What packd reads from tile bytes it did not make: a PMTiles archive (header, directories,
/// tiles, metadata, the TileJSON derived from it), stored tile rows turned into archive tiles
/// (zlib rows, gzip members, vector tile layers), and bodies re-encoded for storage. The first
/// byte picks the reader; every encoding must decode back to what went in.
enum TileReadersTarget {
    static let limit = 1 << 20

    static func run(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let input = Array(bytes.dropFirst())
        switch selector % 3 {
        case 0: archive(input)
        case 1: exportRows(input)
        default: storedBody(input)
        }
    }

    /// A whole archive as a client reads it: any archive the checks let through is read without
    /// a crash, tile by tile, and the TileJSON derived from it plans its zooms.
    static func archive(_ input: [UInt8]) {
        guard let reader = try? PMTilesMemoryReader(input) else { return }
        let header = reader.header
        for z in Int(header.minZoom)..<max(Int(header.minZoom), min(Int(header.maxZoom), 3) + 1) {
            for index in 0..<min(1 << (2 * z), 16) {
                _ = try? reader.tile(z: z, x: index % (1 << z), y: index / (1 << z) % (1 << z))
            }
        }
        let metadata = (try? reader.metadata()) ?? [:]
        let key = "pmtiles+https://fuzz.example/a.pmtiles"
        let tileJSON = PMTilesTileJSON.document(header: header, metadata: metadata, key: key)
        if let tileset = try? Tileset(tileJSON: Data(tileJSON), url: key) {
            // Zooms above packd's deepest (30) are clamped, as any TileJSON's are.
            let zooms = min(Int(header.minZoom), Tileset.maxZoom)...min(Int(header.maxZoom), Tileset.maxZoom)
            invariant(tileset.zoomRange == zooms, "the TileJSON's zooms are not the header's")
            invariant(tileset.template.template == key + "/{z}/{x}/{y}", "the TileJSON's tiles are not the archive's template")
        }
    }

    /// Rows separated by `0xFF 0x00 0xFF`; a row's first byte says whether it is stored as zlib.
    static func exportRows(_ input: [UInt8]) {
        let reader = StoredTileExportReader()
        for (index, row) in split(input).prefix(8).enumerated() {
            guard let flag = row.first else { continue }
            let data = Array(row.dropFirst())
            let compressed = flag & 1 == 1
            guard let encoded = try? reader.encode(data: data, compressed: compressed, z: Int64(index % 15)) else { continue }
            let plain = compressed ? (try? data.withUnsafeBytes { try ZlibCodec.inflate($0, limit: limit).output }) : data
            guard let plain else { continue }
            let plainIsGzip = plain.withUnsafeBytes { ZlibCodec.isGzip($0) }
            if reader.isVector && !plainIsGzip {
                let unwrapped = try? ZlibCodec.gunzippedIfGzip(encoded, limit: 64 << 20)
                invariant(unwrapped == plain, "archive tile does not gunzip to the stored tile")
            } else {
                invariant(encoded == plain, "an image or gzip tile was changed")
            }
        }
        _ = reader.layerNames
    }

    /// A body as the store keeps it must decode to what the upstream meant (gzip undone).
    static func storedBody(_ input: [UInt8]) {
        guard let stored = try? StoredBody.encoding(input, inflateLimit: limit) else { return }
        let decoded = try? stored.decoded(limit: 64 << 20)
        invariant(decoded != nil, "a stored body does not decode")
        if let expected = try? ZlibCodec.gunzippedIfGzip(input, limit: limit) {
            invariant(decoded == expected, "stored body decodes to other bytes")
        }
    }

    static func split(_ bytes: [UInt8]) -> [[UInt8]] {
        var rows: [[UInt8]] = []
        var current: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if index + 2 < bytes.count, bytes[index] == 0xFF, bytes[index + 1] == 0, bytes[index + 2] == 0xFF {
                rows.append(current)
                current = []
                index += 3
            } else {
                current.append(bytes[index])
                index += 1
            }
        }
        rows.append(current)
        return rows
    }
}
