import Foundation
import Packs
@_spi(Fuzzing) import Store
import TileFormats

/// What packd reads from tile bytes it did not make: a PMTiles header, stored tile rows turned
/// into archive tiles (zlib rows, gzip members, vector tile layers), and bodies re-encoded for
/// storage. The first byte picks the reader; every encoding must decode back to what went in.
enum TileReadersTarget {
    static let limit = 1 << 20

    static func run(_ bytes: [UInt8]) {
        guard let selector = bytes.first else { return }
        let input = Array(bytes.dropFirst())
        switch selector % 3 {
        case 0: _ = try? PMTilesHeader(decoding: input)
        case 1: exportRows(input)
        default: storedBody(input)
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
