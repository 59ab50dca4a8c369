import TileFormats

/// What a tileset's tiles are, recognised from the first tile's bytes (MapLibre stores no media
/// type for tiles). Decides the archive's tile type and whether tiles are stored gzip-compressed
/// (vector tiles, as MBTiles and PMTiles readers expect) or as they are (images).
public enum TileFormat: String, Sendable {
    case mvt, png, jpeg, webp

    /// `bytes` are uncompressed tile bytes (or a gzip member, which only vector tiles arrive as).
    init(sniffing bytes: UnsafeRawBufferPointer) {
        func starts(_ prefix: [UInt8]) -> Bool { bytes.count >= prefix.count && zip(bytes, prefix).allSatisfy { $0 == $1 } }
        if starts([0x89, 0x50, 0x4E, 0x47]) {
            self = .png
        } else if starts([0xFF, 0xD8, 0xFF]) {
            self = .jpeg
        } else if starts(Array("RIFF".utf8)), bytes.count >= 12, Array(bytes[8..<12]) == Array("WEBP".utf8) {
            self = .webp
        } else {
            self = .mvt
        }
    }

    var isVector: Bool { self == .mvt }

    /// MBTiles `format` metadata value.
    var mbtilesFormat: String {
        switch self {
        case .mvt: return "pbf"
        case .png: return "png"
        case .jpeg: return "jpg"
        case .webp: return "webp"
        }
    }

    var pmtilesType: PMTilesHeader.TileType {
        switch self {
        case .mvt: return .mvt
        case .png: return .png
        case .jpeg: return .jpeg
        case .webp: return .webp
        }
    }
}
