/// One PMTiles v3 directory entry: `runLength` consecutive tile ids starting at `tileID` share
/// the bytes at `offset..<offset+length` of the tile data section; `runLength == 0` marks an
/// entry pointing at a leaf directory instead (offset/length into the leaf section).
public struct PMTilesEntry: Equatable, Sendable {
    public var tileID: UInt64
    public var offset: UInt64
    public var length: UInt32
    public var runLength: UInt32

    public init(tileID: UInt64, offset: UInt64, length: UInt32, runLength: UInt32) {
        self.tileID = tileID
        self.offset = offset
        self.length = length
        self.runLength = runLength
    }
}

/// The directory serialisation of the PMTiles v3 spec: entry count, then column by column
/// (delta-coded ids, run lengths, lengths, offsets with 0 meaning "right after the previous
/// entry"), varint-encoded and gzip-compressed. Columns compress far better than rows.
public enum PMTilesDirectory {
    public enum Failure: Error, Equatable {
        case corrupt(String)
    }

    /// Entries must be sorted by tile id (the writer produces them in that order).
    public static func encode(_ entries: ArraySlice<PMTilesEntry>) -> [UInt8] {
        var raw = [UInt8]()
        raw.reserveCapacity(entries.count * 6 + 10)
        Varint.append(UInt64(entries.count), to: &raw)
        var lastID: UInt64 = 0
        for entry in entries {
            Varint.append(entry.tileID - lastID, to: &raw)
            lastID = entry.tileID
        }
        for entry in entries { Varint.append(UInt64(entry.runLength), to: &raw) }
        for entry in entries { Varint.append(UInt64(entry.length), to: &raw) }
        var previous: PMTilesEntry?
        for entry in entries {
            if let previous, entry.offset == previous.offset + UInt64(previous.length) {
                Varint.append(0, to: &raw)
            } else {
                Varint.append(entry.offset + 1, to: &raw)
            }
            previous = entry
        }
        return Gzip.compress(raw)
    }

    /// Decodes a gzip-compressed directory. Untrusted input: the entry count is bounded by the
    /// bytes available (every entry takes at least four varint bytes) and inflation is capped.
    public static func decode(_ compressed: [UInt8], inflatedLimit: Int = 64 << 20) throws(Failure) -> [PMTilesEntry] {
        let raw: [UInt8]
        do {
            raw = try Inflater(.gzip).inflated(compressed, limit: inflatedLimit)
        } catch {
            throw .corrupt("directory does not inflate: \(error)")
        }
        var reader = Varint.Reader(raw)
        guard let count = reader.next(), count <= UInt64(raw.count / 4) else { throw .corrupt("bad entry count") }
        var entries = [PMTilesEntry](repeating: PMTilesEntry(tileID: 0, offset: 0, length: 0, runLength: 0), count: Int(count))
        var lastID: UInt64 = 0
        for index in entries.indices {
            guard let delta = reader.next() else { throw .corrupt("truncated ids") }
            let (id, overflow) = lastID.addingReportingOverflow(delta)
            guard !overflow else { throw .corrupt("tile id overflows") }
            entries[index].tileID = id
            lastID = id
        }
        for index in entries.indices {
            guard let run = reader.next(), let value = UInt32(exactly: run) else { throw .corrupt("bad run length") }
            entries[index].runLength = value
        }
        for index in entries.indices {
            guard let length = reader.next(), let value = UInt32(exactly: length) else { throw .corrupt("bad length") }
            entries[index].length = value
        }
        for index in entries.indices {
            guard let value = reader.next() else { throw .corrupt("truncated offsets") }
            if value == 0 {
                guard index > 0 else { throw .corrupt("first offset is relative") }
                let previous = entries[index - 1]
                let (offset, overflow) = previous.offset.addingReportingOverflow(UInt64(previous.length))
                guard !overflow else { throw .corrupt("offset overflows") }
                entries[index].offset = offset
            } else {
                entries[index].offset = value - 1
            }
        }
        return entries
    }
}
