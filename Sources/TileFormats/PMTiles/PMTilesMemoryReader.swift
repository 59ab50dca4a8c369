/// A whole archive in memory read the way a client reads one over the network: header checked
/// against the archive's size, root directory, leaves followed to depth 4 (as the reference
/// reader goes), every directory checked, the tile compression undone within `limits`. For
/// archives packd holds whole (its tests and benchmarks, its fuzzing); downloads read the same
/// sections with range requests (`Jobs/Archive`).
public struct PMTilesMemoryReader {
    public struct Limits: Sendable {
        public var maxDirectoryEntries = 1 << 21
        public var maxTileBytes = 64 << 20
        public var maxMetadataBytes = 32 << 20

        public init() {}
    }

    public enum Failure: Error, CustomStringConvertible {
        case header(PMTilesHeader.Failure)
        case directory(PMTilesDirectory.Failure)
        case tile(String)
        case metadata(PMTilesMetadata.Failure)

        public var description: String {
            switch self {
            case .header(let failure): "header: \(failure)"
            case .directory(let failure): "\(failure)"
            case .tile(let detail): "tile: \(detail)"
            case .metadata(let failure): "\(failure)"
            }
        }
    }

    public let bytes: [UInt8]
    public let header: PMTilesHeader
    public let limits: Limits

    public init(_ bytes: [UInt8], limits: Limits = Limits()) throws(Failure) {
        self.bytes = bytes
        self.limits = limits
        do {
            header = try PMTilesHeader(decoding: Array(bytes.prefix(PMTilesHeader.size)))
            try header.checked(fileSize: UInt64(bytes.count))
        } catch {
            throw .header(error)
        }
    }

    /// The tile's bytes as stored (compressed as the header says), nil when absent.
    public func storedTile(z: Int, x: Int, y: Int) throws(Failure) -> [UInt8]? {
        guard let id = HilbertTileID.encode(z: z, x: x, y: y) else { return nil }
        var directory = (offset: header.rootOffset, length: header.rootLength)
        for _ in 0..<4 {
            let entries: [PMTilesEntry]
            do {
                entries = try PMTilesDirectory.decode(slice(directory.offset, directory.length), compression: header.internalCompression,
                                                      maxEntries: limits.maxDirectoryEntries,
                                                      inflatedLimit: limits.maxDirectoryEntries * 40)
                try PMTilesDirectory.check(entries, tileDataLength: header.tileDataLength, leafLength: header.leafDirectoriesLength)
            } catch {
                throw .directory(error)
            }
            switch PMTilesDirectory.find(id, in: entries) {
            case .missing: return nil
            case .tile(let offset, let length): return slice(header.tileDataOffset + offset, UInt64(length))
            case .leaf(let offset, let length): directory = (header.leafDirectoriesOffset + offset, UInt64(length))
            }
        }
        return nil
    }

    /// The tile once its compression is undone, nil when absent.
    public func tile(z: Int, x: Int, y: Int) throws(Failure) -> [UInt8]? {
        guard let stored = try storedTile(z: z, x: x, y: y) else { return nil }
        guard header.tileCompression == .gzip, !stored.isEmpty else { return stored }
        do {
            return try Inflater(.gzip).inflated(stored, limit: limits.maxTileBytes)
        } catch {
            throw .tile("\(error)")
        }
    }

    /// The JSON metadata object.
    public func metadata() throws(Failure) -> [String: Any] {
        do {
            return try PMTilesMetadata.object(slice(header.metadataOffset, header.metadataLength),
                                              compression: header.internalCompression, inflatedLimit: limits.maxMetadataBytes)
        } catch {
            throw .metadata(error)
        }
    }

    /// Sections lie inside the archive: `checked` made sure, and entries are checked against them.
    private func slice(_ offset: UInt64, _ length: UInt64) -> [UInt8] {
        Array(bytes[Int(offset)..<Int(offset + length)])
    }
}
