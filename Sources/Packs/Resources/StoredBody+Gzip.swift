/// A stored body as a gzip member, for clients that send `Accept-Encoding: gzip`.
extension StoredBody {
    /// The body as gzip (RFC 1952) and its decoded size; nil when it is not stored compressed.
    ///
    /// A zlib body is re-wrapped, not recompressed: its deflate bytes go between a gzip header
    /// and a trailer of CRC-32 and length. The body is inflated once for those two (inflating is
    /// several times cheaper than deflating, and it proves the stored stream whole).
    public func gzipped(limit: Int = ZlibCodec.defaultInflateLimit) throws -> [UInt8]? {
        guard compressed else { return nil }
        return try data.withUnsafeBytes { raw -> [UInt8] in
            // zlib header: CM 8 (deflate), no preset dictionary (FDICT would need the dictionary).
            guard raw.count >= 6, raw[0] & 0x0F == 8, raw[1] & 0x20 == 0,
                  (UInt16(raw[0]) << 8 | UInt16(raw[1])) % 31 == 0 else {
                throw ZlibCodec.Failure.corrupt("not a zlib stream")
            }
            let deflated = UnsafeRawBufferPointer(rebasing: raw[2...])
            let (inflated, consumed) = try ZlibCodec.inflate(deflated, windowBits: -15, limit: limit)
            let crc = inflated.withUnsafeBytes { ZlibCodec.crc32Of($0) }
            let size = UInt32(truncatingIfNeeded: inflated.count)
            var gzip: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
            gzip.reserveCapacity(consumed + 18)
            gzip.append(contentsOf: UnsafeRawBufferPointer(rebasing: deflated[0..<consumed]))
            for value in [crc, size] {
                for shift in stride(from: 0, to: 32, by: 8) { gzip.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
            }
            return gzip
        }
    }
}
