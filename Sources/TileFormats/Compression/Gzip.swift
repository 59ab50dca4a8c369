import CZlib

/// gzip (RFC 1952) as tile archives want it: PMTiles directories and metadata, MBTiles vector
/// tiles. Headers carry no name and mtime 0, so equal inputs give equal bytes and identical
/// tiles deduplicate.
public enum Gzip {
    /// A fixed 10-byte member header: magic, deflate, no flags, mtime 0, no extra flags, OS unknown.
    public static let header: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]

    /// A zlib header MapLibre's `compress` writes: deflate, 32 KiB window, no preset dictionary,
    /// valid check bits — and room for the Adler-32 trailer.
    public static func hasPlainZlibHeader(_ zlib: UnsafeRawBufferPointer) -> Bool {
        zlib.count >= 6 && zlib[0] == 0x78 && zlib[1] & 0x20 == 0 && (UInt16(zlib[0]) << 8 | UInt16(zlib[1])) % 31 == 0
    }

    /// Deflates `input` into one gzip member.
    public static func compress(_ input: UnsafeRawBufferPointer, level: Int32 = Z_DEFAULT_COMPRESSION) -> [UInt8] {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            deflateEnd(stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        // windowBits 15 + 16 asks zlib for a gzip wrapper (with a zero mtime, no name).
        _ = packd_deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY)
        let bound = Int(deflateBound(stream, uLong(input.count))) + 32
        var output = [UInt8](repeating: 0, count: bound)
        let written = output.withUnsafeMutableBufferPointer { buffer -> Int in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(input.count)
            stream.pointee.next_out = buffer.baseAddress
            stream.pointee.avail_out = uInt(buffer.count)
            _ = deflate(stream, Z_FINISH)
            return buffer.count - Int(stream.pointee.avail_out)
        }
        output.removeSubrange(written...)
        return output
    }

    public static func compress(_ input: [UInt8]) -> [UInt8] {
        input.withUnsafeBytes { compress($0) }
    }

    /// The gzip member holding the same deflate stream as the zlib stream `zlib`, whose inflated
    /// form is `inflated` (needed for the CRC-32 and length of the gzip trailer). No deflate runs:
    /// MapLibre's rows are zlib, MBTiles and PMTiles want gzip, and the compressed payload is the
    /// same.
    public static func rewrap(zlib: UnsafeRawBufferPointer, inflated: UnsafeRawBufferPointer) -> [UInt8]? {
        var member = [UInt8]()
        return rewrap(zlib: zlib, inflated: inflated, into: &member) ? member : nil
    }

    /// `rewrap` into `member` (replacing its contents, keeping its capacity): an export rewraps
    /// every tile, and one reused buffer spares an allocation per tile. False if `zlib` cannot
    /// be rewrapped.
    public static func rewrap(zlib: UnsafeRawBufferPointer, inflated: UnsafeRawBufferPointer, into member: inout [UInt8]) -> Bool {
        // A zlib stream is CMF FLG, deflate data, Adler-32. A preset dictionary (FDICT) cannot be
        // expressed in gzip.
        guard hasPlainZlibHeader(zlib) else { return false }
        let payload = UnsafeRawBufferPointer(rebasing: zlib[2..<(zlib.count - 4)])
        let crc = UInt32(crc32_z(crc32(0, nil, 0), inflated.baseAddress?.assumingMemoryBound(to: Bytef.self), z_size_t(inflated.count)))
        let size = UInt32(truncatingIfNeeded: inflated.count)
        member.removeAll(keepingCapacity: true)
        member.reserveCapacity(header.count + payload.count + 8)
        member.append(contentsOf: header)
        member.append(contentsOf: payload)
        appendLittleEndian(crc, to: &member)
        appendLittleEndian(size, to: &member)
        return true
    }

    /// The CRC-32 of the uncompressed data a gzip member's trailer records (nil if `member` is
    /// too short to be one). Unverified: callers use it as a hash, never as proof.
    public static func trailerCRC(_ member: UnsafeRawBufferPointer) -> UInt32? {
        guard member.count >= header.count + 8 else { return nil }
        let at = member.count - 8
        return UInt32(member[at]) | UInt32(member[at + 1]) << 8 | UInt32(member[at + 2]) << 16 | UInt32(member[at + 3]) << 24
    }

    private static func appendLittleEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}
