import CZlib

/// Writes a PMTiles v3 archive from tiles given in ascending Hilbert id order, with flat memory:
/// tile bodies go straight to a scratch file and only the directory entries (24 bytes a tile at
/// most, far fewer after run-length coding) stay in memory. Identical tile bodies are stored once
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
    private let data: ExportFile
    private var entries: [PMTilesEntry] = []
    private var offsetsByContent: [ContentKey: UInt64] = [:]
    private(set) var addressedTiles: UInt64 = 0

    /// Opens `path` for the archive; the scratch file lives in the same directory (same disk).
    init(path: String) throws(Failure) {
        do {
            output = try ExportFile.create(path)
            let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
            data = try ExportFile.scratch(in: directory.isEmpty ? "/" : directory)
        } catch {
            throw .file(error)
        }
    }

    func append(tileID: UInt64, bytes: UnsafeRawBufferPointer) throws(Failure) {
        guard bytes.count <= Int(UInt32.max) else { throw .tileTooLarge(bytes.count) }
        if let last = entries.last, tileID < last.tileID + UInt64(last.runLength) {
            throw .outOfOrder(previous: last.tileID, next: tileID)
        }
        let length = UInt32(bytes.count)
        let crc = ZlibCodec.crc32Of(bytes)
        let key = ContentKey(length: bytes.count, crc: crc)
        addressedTiles += 1
        do {
            if let offset = offsetsByContent[key], try data.read(at: offset, count: bytes.count).elementsEqual(bytes) {
                if var last = entries.last, last.offset == offset, last.length == length,
                   tileID == last.tileID + UInt64(last.runLength), last.runLength < UInt32.max {
                    last.runLength += 1
                    entries[entries.count - 1] = last
                } else {
                    entries.append(PMTilesEntry(tileID: tileID, offset: offset, length: length, runLength: 1))
                }
                return
            }
            let offset = data.size
            try data.append(bytes)
            if offsetsByContent[key] == nil { offsetsByContent[key] = offset }
            entries.append(PMTilesEntry(tileID: tileID, offset: offset, length: length, runLength: 1))
        } catch {
            throw .file(error)
        }
    }

    /// Lays out header, root directory, metadata, leaf directories and tile data, and closes the
    /// file. `header` supplies tile type, compression, zooms, bounds and center; the section
    /// fields and counts are filled in here.
    func finish(header: PMTilesHeader, metadataJSON: [UInt8]) throws(Failure) -> PMTilesHeader {
        let directories = PMTilesDirectoryLayout(entries: entries)
        let metadata = Gzip.compress(metadataJSON)
        var header = header
        header.clustered = true
        header.internalCompression = .gzip
        header.rootOffset = UInt64(PMTilesHeader.size)
        header.rootLength = UInt64(directories.root.count)
        header.metadataOffset = header.rootOffset + header.rootLength
        header.metadataLength = UInt64(metadata.count)
        header.leafDirectoriesOffset = header.metadataOffset + header.metadataLength
        header.leafDirectoriesLength = UInt64(directories.leaves.count)
        header.tileDataOffset = header.leafDirectoriesOffset + header.leafDirectoriesLength
        header.tileDataLength = data.size
        header.addressedTilesCount = addressedTiles
        header.tileEntriesCount = UInt64(entries.count)
        header.tileContentsCount = UInt64(offsetsByContent.count)
        do {
            try output.append(header.encoded())
            try output.append(directories.root)
            try output.append(metadata)
            try output.append(directories.leaves)
            try output.append(contentsOf: data)
        } catch {
            throw .file(error)
        }
        output.close()
        data.close()
        return header
    }
}
