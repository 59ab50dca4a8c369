import Foundation
@testable import Store
@testable import TileFormats

/// Reads a whole PMTiles v3 archive back (tests only): header, root and leaf directories, and
/// every addressed tile, expanding run lengths, so an export can be compared tile by tile.
struct PMTilesArchiveReader {
    let header: PMTilesHeader
    let metadata: [String: Any]
    let bytes: [UInt8]
    /// Leaf directories seen (0 when the root held every entry).
    private(set) var leafCount = 0

    init(path: String) throws {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let header = try PMTilesHeader(decoding: Array(bytes[0..<PMTilesHeader.size]))
        self.bytes = bytes
        self.header = header
        let start = Int(header.metadataOffset)
        let metadataBytes = try StoreIOFixture.gunzip(Array(bytes[start..<(start + Int(header.metadataLength))]))
        metadata = try JSONSerialization.jsonObject(with: Data(metadataBytes)) as? [String: Any] ?? [:]
    }

    func slice(_ offset: UInt64, _ length: UInt64) -> [UInt8] {
        Array(bytes[Int(offset)..<Int(offset + length)])
    }

    /// Every addressed tile id with its stored bytes, in directory order.
    mutating func tiles() throws -> [(id: UInt64, bytes: [UInt8])] {
        var result: [(UInt64, [UInt8])] = []
        try walk(slice(header.rootOffset, header.rootLength), into: &result)
        return result
    }

    private mutating func walk(_ directory: [UInt8], into result: inout [(UInt64, [UInt8])]) throws {
        for entry in try PMTilesDirectory.decode(directory) {
            if entry.runLength == 0 {
                leafCount += 1
                try walk(slice(header.leafDirectoriesOffset + entry.offset, UInt64(entry.length)), into: &result)
            } else {
                let body = slice(header.tileDataOffset + entry.offset, UInt64(entry.length))
                for step in 0..<UInt64(entry.runLength) { result.append((entry.tileID + step, body)) }
            }
        }
    }
}
