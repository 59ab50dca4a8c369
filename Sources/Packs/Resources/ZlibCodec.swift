import CZlib

/// The zlib operations the store needs, over byte buffers, with every output bounded: bodies are
/// untrusted and a few KiB of deflate can claim gigabytes.
public enum ZlibCodec {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The stream ends early or its checksum or length trailer is wrong (a cut download).
        case truncated
        /// Not a valid stream of the expected format.
        case corrupt(String)
        /// Inflating would exceed the allowed output size.
        case tooLarge(limit: Int)
        /// More than one gzip member (legal, rare): cannot be re-wrapped as one zlib stream.
        case multipleMembers

        public var description: String {
            switch self {
            case .truncated: return "compressed stream is truncated"
            case .corrupt(let detail): return "compressed stream is corrupt: \(detail)"
            case .tooLarge(let limit): return "inflated size exceeds \(limit) bytes"
            case .multipleMembers: return "gzip body has more than one member"
            }
        }
    }

    /// Inflated bodies larger than this are refused (tiles and styles are far smaller).
    public static let defaultInflateLimit = 64 << 20

    /// zlib-format deflate (what MapLibre's `util::compress` writes) at zlib's default level.
    /// nil only if zlib cannot allocate its state.
    public static func deflate(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        let bound = Int(compressBound(uLong(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        var outputLength = uLongf(bound)
        let status = output.withUnsafeMutableBytes { out in
            compress2(out.baseAddress!.assumingMemoryBound(to: Bytef.self), &outputLength,
                      input.baseAddress?.assumingMemoryBound(to: Bytef.self) ?? UnsafePointer(Self.emptyInput), uLong(input.count),
                      Z_DEFAULT_COMPRESSION)
        }
        // compressBound guarantees room; Z_MEM_ERROR is the only other outcome.
        guard status == Z_OK else { return nil }
        output.removeSubrange(Int(outputLength)...)
        return output
    }

    /// Inflates a zlib stream (`windowBits` 15) or a raw deflate stream (-15).
    /// Returns the output and how many input bytes the stream used.
    public static func inflate(_ input: UnsafeRawBufferPointer, windowBits: Int32 = 15,
                               limit: Int = defaultInflateLimit) throws(Failure) -> (output: [UInt8], consumed: Int) {
        var stream = z_stream()
        guard packd_inflateInit2(&stream, windowBits) == Z_OK else { throw .corrupt("inflateInit2") }
        defer { inflateEnd(&stream) }
        var output = [UInt8]()
        output.reserveCapacity(min(limit, max(4096, input.count * 4)))
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self) ?? UnsafePointer(Self.emptyInput))
        stream.avail_in = uInt(input.count)
        while true {
            let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
                stream.next_out = buffer.baseAddress
                stream.avail_out = uInt(buffer.count)
                let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                return (status, buffer.count - Int(stream.avail_out))
            }
            if output.count + produced > limit { throw .tooLarge(limit: limit) }
            output.append(contentsOf: chunk[0..<produced])
            switch status {
            case Z_STREAM_END:
                return (output, input.count - Int(stream.avail_in))
            case Z_OK:
                continue
            case Z_BUF_ERROR:
                // No progress possible: input exhausted before the end of the stream.
                if stream.avail_in == 0 { throw .truncated }
                continue
            case Z_DATA_ERROR:
                throw .corrupt(stream.msg.map { String(cString: $0) } ?? "data error")
            default:
                throw .corrupt("inflate status \(status)")
            }
        }
    }

    /// A gzip member (RFC 1952) re-expressed as a zlib stream (RFC 1950) *without recompressing*:
    /// the same deflate bytes between a zlib header and the Adler-32 of the inflated data. The
    /// member is inflated once, to verify its CRC-32 and length (a truncated download must fail
    /// here so it is retried) and to compute Adler-32.
    public static func rewrapGzipAsZlib(_ gzip: UnsafeRawBufferPointer,
                                        limit: Int = defaultInflateLimit) throws(Failure) -> (zlib: [UInt8], inflatedCount: Int, inflated: [UInt8]) {
        let start = try gzipPayloadOffset(gzip)
        let payload = UnsafeRawBufferPointer(rebasing: gzip[start...])
        let (inflated, consumed) = try inflate(payload, windowBits: -15, limit: limit)
        let trailer = payload.count - consumed
        guard trailer >= 8 else { throw .truncated }
        guard trailer == 8 else { throw .multipleMembers }
        let crcExpected = readLittleEndian32(payload, at: consumed)
        let sizeExpected = readLittleEndian32(payload, at: consumed + 4)
        let crc = inflated.withUnsafeBytes { crc32Of($0) }
        guard crc == crcExpected, UInt32(truncatingIfNeeded: inflated.count) == sizeExpected else { throw .truncated }

        let adler = inflated.withUnsafeBytes { adler32Of($0) }
        var zlib = [UInt8]()
        zlib.reserveCapacity(consumed + 6)
        // CMF 0x78: deflate, 32 KiB window (gzip allows up to that); FLG 0x9C makes the check valid.
        zlib.append(0x78)
        zlib.append(0x9C)
        zlib.append(contentsOf: UnsafeRawBufferPointer(rebasing: payload[0..<consumed]))
        zlib.append(UInt8(truncatingIfNeeded: adler >> 24))
        zlib.append(UInt8(truncatingIfNeeded: adler >> 16))
        zlib.append(UInt8(truncatingIfNeeded: adler >> 8))
        zlib.append(UInt8(truncatingIfNeeded: adler))
        return (zlib, inflated.count, inflated)
    }

    /// Inflates every member of a gzip body (RFC 1952 allows concatenated members), each one's
    /// CRC-32 and length checked by zlib; the total output is bounded by `limit`.
    public static func inflateGzipMembers(_ gzip: UnsafeRawBufferPointer, limit: Int = defaultInflateLimit) throws(Failure) -> [UInt8] {
        var output: [UInt8] = []
        var offset = 0
        while offset < gzip.count {
            let rest = UnsafeRawBufferPointer(rebasing: gzip[offset...])
            guard isGzip(rest) else { throw .corrupt("data after the last gzip member") }
            let (member, consumed) = try inflate(rest, windowBits: 31, limit: limit - output.count)
            output.append(contentsOf: member)
            offset += consumed
        }
        return output
    }

    /// A document as its parser needs it: gzip bodies (an upstream's `Content-Encoding: gzip`,
    /// which Fetch passes through untouched) inflated within `limit`, anything else unchanged.
    public static func gunzippedIfGzip(_ body: [UInt8], limit: Int = defaultInflateLimit) throws(Failure) -> [UInt8] {
        do {
            return try body.withUnsafeBytes { raw in
                isGzip(raw) ? try inflateGzipMembers(raw, limit: limit) : body
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .corrupt("\(error)")
        }
    }

    public static func isGzip(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 3 && bytes[0] == 0x1F && bytes[1] == 0x8B && bytes[2] == 8
    }

    /// Skips the gzip header (RFC 1952 2.3) including its optional fields, bounds-checked.
    static func gzipPayloadOffset(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> Int {
        guard isGzip(bytes) else { throw .corrupt("not gzip") }
        guard bytes.count >= 10 else { throw .truncated }
        let flags = bytes[3]
        guard flags & 0xE0 == 0 else { throw .corrupt("reserved gzip flags set") }
        var offset = 10
        if flags & 0x04 != 0 { // FEXTRA
            guard offset + 2 <= bytes.count else { throw .truncated }
            offset += 2 + Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
        }
        for flag: UInt8 in [0x08, 0x10] where flags & flag != 0 { // FNAME, FCOMMENT: zero-terminated
            while offset < bytes.count && bytes[offset] != 0 { offset += 1 }
            offset += 1
        }
        if flags & 0x02 != 0 { offset += 2 } // FHCRC
        guard offset < bytes.count else { throw .truncated }
        return offset
    }

    static func readLittleEndian32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }

    public static func adler32Of(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(adler32_z(adler32(0, nil, 0), bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), z_size_t(bytes.count)))
    }

    public static func crc32Of(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        UInt32(crc32_z(crc32(0, nil, 0), bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), z_size_t(bytes.count)))
    }

    nonisolated(unsafe) private static let emptyInput: UnsafeMutablePointer<Bytef> = .allocate(capacity: 1)
}
