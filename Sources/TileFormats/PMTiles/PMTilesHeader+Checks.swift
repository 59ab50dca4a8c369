/// Reading an archive someone else wrote: the header is untrusted, so before any offset in it is
/// used it is checked against the spec and the archive's size.
extension PMTilesHeader {
    /// Throws unless the header can be read as the spec says: zooms within 0…31 and in order,
    /// internal and tile compression that packd can undo (none or gzip: brotli and zstd are valid
    /// PMTiles, but neither packd nor MapLibre Native reads them), a root directory that is not
    /// empty and lies within the first 16 KiB, every section inside `fileSize` when it is known
    /// (and none overflowing), and bounds that are longitudes and latitudes with south ≤ north.
    public func checked(fileSize: UInt64?) throws(Failure) {
        guard maxZoom <= UInt8(HilbertTileID.maximumZoom) else {
            throw .invalid(field: "max_zoom", detail: "\(maxZoom) is above \(HilbertTileID.maximumZoom)")
        }
        guard minZoom <= maxZoom else { throw .invalid(field: "min_zoom", detail: "\(minZoom) is above max_zoom \(maxZoom)") }
        for (field, value) in [("internal_compression", internalCompression), ("tile_compression", tileCompression)] {
            switch value {
            case .none, .gzip: continue
            case .unknown: throw .unsupported(field: field, detail: "unknown compression")
            case .brotli, .zstd:
                throw .unsupported(field: field, detail: "\(value) compression is not supported (only none and gzip, as in MapLibre Native)")
            }
        }
        guard rootLength > 0 else { throw .invalid(field: "root_length", detail: "the root directory is empty") }
        let sections: [(String, UInt64, UInt64)] = [
            ("root", rootOffset, rootLength), ("metadata", metadataOffset, metadataLength),
            ("leaf_directories", leafDirectoriesOffset, leafDirectoriesLength), ("tile_data", tileDataOffset, tileDataLength),
        ]
        for (name, offset, length) in sections {
            let (end, overflow) = offset.addingReportingOverflow(length)
            guard !overflow else { throw .invalid(field: "\(name)_offset", detail: "offset + length overflows") }
            if let fileSize, end > fileSize {
                throw .invalid(field: "\(name)_offset", detail: "the section ends at byte \(end), past the archive's \(fileSize) bytes")
            }
        }
        guard rootOffset >= UInt64(Self.size), rootOffset + rootLength <= UInt64(Self.rootFetchSize) else {
            throw .invalid(field: "root_offset", detail: "the root directory must lie after the header within the first \(Self.rootFetchSize) bytes")
        }
        for (field, value, limit) in [("min_lon_e7", minLonE7, 1_800_000_000), ("max_lon_e7", maxLonE7, 1_800_000_000),
                                      ("min_lat_e7", minLatE7, 900_000_000), ("max_lat_e7", maxLatE7, 900_000_000) as (String, Int32, Int32)] {
            guard abs(Int64(value)) <= Int64(limit) else { throw .invalid(field: field, detail: "\(value) is out of range") }
        }
        guard minLatE7 <= maxLatE7 else { throw .invalid(field: "min_lat_e7", detail: "south is above north") }
    }

    /// The bounds in degrees, `[west, south, east, north]` (west above east: across the antimeridian).
    public var bounds: (west: Double, south: Double, east: Double, north: Double) {
        (Double(minLonE7) / 1e7, Double(minLatE7) / 1e7, Double(maxLonE7) / 1e7, Double(maxLatE7) / 1e7)
    }

    /// The center in degrees and its zoom.
    public var center: (longitude: Double, latitude: Double, zoom: Int) {
        (Double(centerLonE7) / 1e7, Double(centerLatE7) / 1e7, Int(centerZoom))
    }
}
