import CZlib
import Packs
import TileFormats

/// Writes a PMTiles v3 archive from tiles given in ascending Hilbert id order, with flat memory:
/// tile bodies go straight to their final place in the file and only the directory entries (24
/// bytes a tile at most, far fewer after run-length coding) stay in memory. The spec lets every
/// section but the header move as long as the root directory lies in the first 16 KiB, so the
/// layout is header + root (padded to 16 KiB), tile data, metadata, leaf directories: tile data
/// is written once, with no scratch file to copy. Identical tile bodies are stored once
/// (dedup by CRC-32 + length, confirmed byte for byte), and a run of consecutive ids with the
/// same body becomes one entry — the ocean at high zoom costs a few bytes.
final class PMTilesWriter {
    enum Failure: Error, CustomStringConvertible {
        case outOfOrder(previous: UInt64, next: UInt64)
        case tileTooLarge(Int)
        case file(ExportFile.Failure)

        var description: String {
            switch self {
            case .outOfOrder(let previous, let next): return "tile id \(next) after \(previous): ids must ascend"
            case .tileTooLarge(let size): return "tile of \(size) bytes exceeds PMTiles' 4 GiB entry limit"
            case .file(let failure): return failure.description
            }
        }
    }

    private struct ContentKey: Hashable {
        let length: Int
        let crc: UInt32
    }

    private let output: ExportFile
    /// Where tile data starts: right after the reserved header + root directory region.
    private let dataOffset = UInt64(PMTilesHeader.rootFetchSize)
    private var dataLength: UInt64 = 0
    private var entries: [PMTilesEntry] = []
    private var offsetsByContent: [ContentKey: UInt64] = [:]
    private(set) var addressedTiles: UInt64 = 0

    init(path: String) throws(Failure) {
        do {
            output = try ExportFile.create(path)
            try output.append([UInt8](repeating: 0, count: Int(dataOffset)))
        } catch {
            throw .file(error)
        }
    }

    /// Appends one tile. `checksum` is a CRC-32 identifying the content if the caller already
    /// has one (a gzip member's trailer holds the CRC-32 of the tile it wraps); otherwise the
    /// writer computes the CRC-32 of `bytes`. It only picks the candidate duplicate, which is then
    /// confirmed byte for byte, so either choice gives the same archive.
    func append(tileID: UInt64, bytes: UnsafeRawBufferPointer, checksum: UInt32? = nil) throws(Failure) {
        guard bytes.count <= Int(UInt32.max) else { throw .tileTooLarge(bytes.count) }
        if let last = entries.last, tileID < last.tileID + UInt64(last.runLength) {
            throw .outOfOrder(previous: last.tileID, next: tileID)
        }
        let length = UInt32(bytes.count)
        let crc = checksum ?? ZlibCodec.crc32Of(bytes)
        let key = ContentKey(length: bytes.count, crc: crc)
        addressedTiles += 1
        do {
            if let offset = offsetsByContent[key], try output.holds(bytes, at: dataOffset + offset) {
                if var last = entries.last, last.offset == offset, last.length == length,
                   tileID == last.tileID + UInt64(last.runLength), last.runLength < UInt32.max {
                    last.runLength += 1
                    entries[entries.count - 1] = last
                } else {
                    entries.append(PMTilesEntry(tileID: tileID, offset: offset, length: length, runLength: 1))
                }
                return
            }
            let offset = dataLength
            try output.append(bytes)
            dataLength += UInt64(bytes.count)
            if offsetsByContent[key] == nil { offsetsByContent[key] = offset }
            entries.append(PMTilesEntry(tileID: tileID, offset: offset, length: length, runLength: 1))
        } catch {
            throw .file(error)
        }
    }

    /// Writes metadata and leaf directories after the tile data, then the header and root
    /// directory at the start, and closes the file. `header` supplies tile type, compression,
    /// zooms, bounds and center; the section fields and counts are filled in here.
    func finish(header: PMTilesHeader, metadataJSON: [UInt8]) throws(Failure) -> PMTilesHeader {
        let directories = PMTilesDirectoryLayout(entries: entries)
        let metadata = Gzip.compress(metadataJSON)
        var header = header
        header.clustered = true
        header.internalCompression = .gzip
        header.rootOffset = UInt64(PMTilesHeader.size)
        header.rootLength = UInt64(directories.root.count)
        header.tileDataOffset = dataOffset
        header.tileDataLength = dataLength
        header.metadataOffset = dataOffset + dataLength
        header.metadataLength = UInt64(metadata.count)
        header.leafDirectoriesOffset = header.metadataOffset + header.metadataLength
        header.leafDirectoriesLength = UInt64(directories.leaves.count)
        header.addressedTilesCount = addressedTiles
        header.tileEntriesCount = UInt64(entries.count)
        header.tileContentsCount = UInt64(offsetsByContent.count)
        do {
            try output.append(metadata)
            try output.append(directories.leaves)
            try output.overwrite(header.encoded() + directories.root, at: 0)
        } catch {
            throw .file(error)
        }
        output.close()
        return header
    }
}
