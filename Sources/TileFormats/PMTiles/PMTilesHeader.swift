/// The fixed 127-byte PMTiles v3 header: where each section is, how tiles are compressed and
/// what they are, and the archive's bounds, zooms and center (little-endian, coordinates as
/// degrees × 10^7).
public struct PMTilesHeader: Equatable, Sendable {
    public static let size = 127
    /// Readers fetch the first 16 KiB in one request: header plus root directory must fit.
    public static let rootFetchSize = 16_384

    public enum Compression: UInt8, Sendable { case unknown = 0, none = 1, gzip = 2, brotli = 3, zstd = 4 }
    public enum TileType: UInt8, Sendable { case unknown = 0, mvt = 1, png = 2, jpeg = 3, webp = 4, avif = 5, mlt = 6 }

    public var rootOffset: UInt64 = 0
    public var rootLength: UInt64 = 0
    public var metadataOffset: UInt64 = 0
    public var metadataLength: UInt64 = 0
    public var leafDirectoriesOffset: UInt64 = 0
    public var leafDirectoriesLength: UInt64 = 0
    public var tileDataOffset: UInt64 = 0
    public var tileDataLength: UInt64 = 0
    public var addressedTilesCount: UInt64 = 0
    public var tileEntriesCount: UInt64 = 0
    public var tileContentsCount: UInt64 = 0
    public var clustered = true
    public var internalCompression = Compression.gzip
    public var tileCompression = Compression.none
    public var tileType = TileType.unknown
    public var minZoom: UInt8 = 0
    public var maxZoom: UInt8 = 0
    public var minLonE7: Int32 = 0
    public var minLatE7: Int32 = 0
    public var maxLonE7: Int32 = 0
    public var maxLatE7: Int32 = 0
    public var centerZoom: UInt8 = 0
    public var centerLonE7: Int32 = 0
    public var centerLatE7: Int32 = 0

    public init() {}

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case notPMTiles
        case unsupportedVersion(UInt8)
        case badEnum(field: String, value: UInt8)
        /// A field that breaks the spec or points outside the archive (`checked`).
        case invalid(field: String, detail: String)
        /// A valid archive packd cannot read or store: brotli or zstd compression.
        case unsupported(field: String, detail: String)

        public var description: String {
            switch self {
            case .notPMTiles: "not a PMTiles archive (no \"PMTiles\" magic)"
            case .unsupportedVersion(let version): "PMTiles version \(version) is not supported (only 3)"
            case .badEnum(let field, let value): "\(field) has the unknown value \(value)"
            case .invalid(let field, let detail): "\(field): \(detail)"
            case .unsupported(let field, let detail): "\(field): \(detail)"
            }
        }
    }

    public func encoded() -> [UInt8] {
        var bytes = Array("PMTiles".utf8)
        bytes.append(3)
        for value in [rootOffset, rootLength, metadataOffset, metadataLength, leafDirectoriesOffset,
                      leafDirectoriesLength, tileDataOffset, tileDataLength, addressedTilesCount,
                      tileEntriesCount, tileContentsCount] {
            append(value, to: &bytes)
        }
        bytes += [clustered ? 1 : 0, internalCompression.rawValue, tileCompression.rawValue, tileType.rawValue,
                  minZoom, maxZoom]
        for value in [minLonE7, minLatE7, maxLonE7, maxLatE7] { append(value, to: &bytes) }
        bytes.append(centerZoom)
        append(centerLonE7, to: &bytes)
        append(centerLatE7, to: &bytes)
        return bytes
    }

    public init(decoding bytes: [UInt8]) throws(Failure) {
        guard bytes.count >= Self.size, Array(bytes[0..<7]) == Array("PMTiles".utf8) else { throw .notPMTiles }
        guard bytes[7] == 3 else { throw .unsupportedVersion(bytes[7]) }
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
        func i32(_ at: Int) -> Int32 {
            Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) })
        }
        func compression(_ at: Int, _ field: String) throws(Failure) -> Compression {
            guard let value = Compression(rawValue: bytes[at]) else { throw .badEnum(field: field, value: bytes[at]) }
            return value
        }
        rootOffset = u64(8)
        rootLength = u64(16)
        metadataOffset = u64(24)
        metadataLength = u64(32)
        leafDirectoriesOffset = u64(40)
        leafDirectoriesLength = u64(48)
        tileDataOffset = u64(56)
        tileDataLength = u64(64)
        addressedTilesCount = u64(72)
        tileEntriesCount = u64(80)
        tileContentsCount = u64(88)
        clustered = bytes[96] == 1
        internalCompression = try compression(97, "internal_compression")
        tileCompression = try compression(98, "tile_compression")
        guard let type = TileType(rawValue: bytes[99]) else { throw .badEnum(field: "tile_type", value: bytes[99]) }
        tileType = type
        minZoom = bytes[100]
        maxZoom = bytes[101]
        minLonE7 = i32(102)
        minLatE7 = i32(106)
        maxLonE7 = i32(110)
        maxLatE7 = i32(114)
        centerZoom = bytes[118]
        centerLonE7 = i32(119)
        centerLatE7 = i32(123)
    }

    private func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
