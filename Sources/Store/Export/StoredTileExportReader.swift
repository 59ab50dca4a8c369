/// The export's reading of stored tile rows, opened to `packd-fuzz` (`make fuzz`) as SPI: rows
/// came from upstreams or uploads and are untrusted. Not part of the module's API.
@_spi(Fuzzing) public final class StoredTileExportReader {
    private let encoder = ArchiveTileEncoder(collectsLayers: true)

    public init() {}

    /// The bytes an archive would store for one row (`data` + `compressed` of a `tiles` row).
    public func encode(data: [UInt8], compressed: Bool, z: Int64) throws -> [UInt8] {
        var encoded: [UInt8] = []
        try data.withUnsafeBytes { raw in
            try encoder.encode(data: raw, compressed: compressed, z: z, x: 0, y: 0) { encoded = Array($0) }
        }
        return encoded
    }

    /// Whether the first row made this a vector tileset (archives then hold gzip members).
    public var isVector: Bool { encoder.format?.isVector ?? false }

    /// The vector layers collected so far, sorted.
    public var layerNames: [String] { encoder.layers.layers.keys.sorted() }
}
