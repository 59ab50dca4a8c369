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

/// What a directory says about one tile id (the spec's `find_tile`). Offsets are relative to
/// their section: the tile data section for a tile, the leaf directory section for a leaf.
public enum PMTilesLookup: Equatable, Sendable {
    case tile(offset: UInt64, length: UInt32)
    /// The tile, if the archive has it, is in this leaf directory.
    case leaf(offset: UInt64, length: UInt32)
    /// The archive has no such tile.
    case missing
}

/// The directory serialisation of the PMTiles v3 spec: entry count, then column by column
/// (delta-coded ids, run lengths, lengths, offsets with 0 meaning "right after the previous
/// entry"), varint-encoded and compressed with the archive's internal compression. Columns
/// compress far better than rows.
public enum PMTilesDirectory {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case corrupt(String)

        public var description: String {
            switch self {
            case .corrupt(let detail): "corrupt directory: \(detail)"
            }
        }
    }

    /// Entries must be sorted by tile id (the writer produces them in that order).
    public static func encode(_ entries: ArraySlice<PMTilesEntry>, compression: PMTilesHeader.Compression = .gzip) -> [UInt8] {
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
        return compression == .none ? raw : Gzip.compress(raw)
    }

    /// Decodes a gzip-compressed directory (see `decode(_:compression:maxEntries:inflatedLimit:)`).
    public static func decode(_ compressed: [UInt8], inflatedLimit: Int = 64 << 20) throws(Failure) -> [PMTilesEntry] {
        try decode(compressed, compression: .gzip, maxEntries: .max, inflatedLimit: inflatedLimit)
    }

    /// Decodes a directory stored with `compression` (gzip or none). Untrusted input: inflation
    /// is capped, the entry count is bounded by the bytes available (every entry takes at least
    /// four varint bytes) and by `maxEntries`, ids must ascend strictly and offsets not overflow.
    public static func decode(_ stored: [UInt8], compression: PMTilesHeader.Compression, maxEntries: Int,
                              inflatedLimit: Int = 64 << 20) throws(Failure) -> [PMTilesEntry] {
        let raw: [UInt8]
        switch compression {
        case .none:
            raw = stored
        case .gzip:
            do {
                raw = try Inflater(.gzip).inflated(stored, limit: inflatedLimit)
            } catch {
                throw .corrupt("directory does not inflate: \(error)")
            }
        default:
            throw .corrupt("directories compressed with \(compression) cannot be read")
        }
        var reader = Varint.Reader(raw)
        guard let count = reader.next(), count <= UInt64(raw.count / 4) else { throw .corrupt("bad entry count") }
        guard count <= UInt64(max(0, maxEntries)) else { throw .corrupt("\(count) entries, more than the \(maxEntries) allowed") }
        var entries = [PMTilesEntry](repeating: PMTilesEntry(tileID: 0, offset: 0, length: 0, runLength: 0), count: Int(count))
        var lastID: UInt64 = 0
        for index in entries.indices {
            guard let delta = reader.next() else { throw .corrupt("truncated ids") }
            guard index == 0 || delta > 0 else { throw .corrupt("tile ids do not ascend at entry \(index)") }
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

    /// Checks that every entry points inside its section: a tile's bytes inside the tile data
    /// (`tileDataLength`), a leaf's inside the leaf directories (`leafLength`, and not empty), and
    /// that no run of ids overflows. A directory that passes can be looked up without further
    /// checks on the offsets it yields.
    public static func check(_ entries: [PMTilesEntry], tileDataLength: UInt64, leafLength: UInt64) throws(Failure) {
        for (index, entry) in entries.enumerated() {
            let (end, overflow) = entry.offset.addingReportingOverflow(UInt64(entry.length))
            if entry.runLength == 0 {
                guard entry.length > 0, !overflow, end <= leafLength else {
                    throw .corrupt("entry \(index) points outside the leaf directories")
                }
            } else {
                guard !overflow, end <= tileDataLength else { throw .corrupt("entry \(index) points outside the tile data") }
                guard entry.tileID.addingReportingOverflow(UInt64(entry.runLength)).overflow == false else {
                    throw .corrupt("entry \(index)'s run of ids overflows")
                }
            }
        }
    }

    /// Where `tileID` is, by binary search over entries sorted by id (the spec's `find_tile`): the
    /// entry with that id, or the last entry before it when that is a leaf (whose ids start there)
    /// or a run reaching the id.
    public static func find(_ tileID: UInt64, in entries: [PMTilesEntry]) -> PMTilesLookup {
        var low = 0
        var high = entries.count - 1
        while low <= high {
            let middle = (low + high) >> 1
            let entry = entries[middle]
            if entry.tileID < tileID {
                low = middle + 1
            } else if entry.tileID > tileID {
                high = middle - 1
            } else {
                return lookup(entry)
            }
        }
        guard high >= 0 else { return .missing }
        let entry = entries[high]
        if entry.runLength == 0 || tileID - entry.tileID < UInt64(entry.runLength) { return lookup(entry) }
        return .missing
    }

    private static func lookup(_ entry: PMTilesEntry) -> PMTilesLookup {
        entry.runLength == 0 ? .leaf(offset: entry.offset, length: entry.length) : .tile(offset: entry.offset, length: entry.length)
    }
}
