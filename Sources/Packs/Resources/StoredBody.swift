import Foundation

/// A response body as it goes into a `data` column: the bytes and the `compressed` flag.
///
/// MapLibre stores zlib when that is smaller, else the raw bytes. Encoding is the costly part of
/// a write, so this avoids work that cannot pay off: a gzip body is re-wrapped as zlib (no
/// recompression), image formats are stored raw, and bodies whose bytes look random (already
/// compressed or encrypted) skip deflate after a cheap entropy estimate on a sample.
public struct StoredBody: Sendable, Equatable {
    public let data: [UInt8]
    public let compressed: Bool

    /// The size MapLibre accounts for a resource: `LENGTH(data)`.
    public var storedSize: Int { data.count }

    public init(data: [UInt8], compressed: Bool) {
        self.data = data
        self.compressed = compressed
    }

    /// Chooses the stored form of `body` (the bytes as the server sent them).
    /// Throws `ZlibCodec.Failure` for a gzip body that is truncated or corrupt, so the download retries it.
    public static func encoding(_ body: [UInt8], inflateLimit: Int = ZlibCodec.defaultInflateLimit) throws -> StoredBody {
        try body.withUnsafeBytes { raw -> StoredBody in
            guard ZlibCodec.isGzip(raw) else { return encodingPlain(body, raw) }
            do {
                let rewrapped = try ZlibCodec.rewrapGzipAsZlib(raw, limit: inflateLimit)
                return rewrapped.zlib.count < rewrapped.inflatedCount
                    ? StoredBody(data: rewrapped.zlib, compressed: true)
                    : StoredBody(data: rewrapped.inflated, compressed: false)
            } catch ZlibCodec.Failure.multipleMembers {
                // The rare concatenated gzip: inflate all members, then store the content as any
                // body. Never gzip-decoded again (a gzip quine would recurse forever).
                let inflated = try ZlibCodec.inflateGzipMembers(raw, limit: inflateLimit)
                return inflated.withUnsafeBytes { encodingPlain(inflated, $0) }
            }
        }
    }

    /// Raw for images and random-looking bytes, else zlib when that is smaller.
    private static func encodingPlain(_ body: [UInt8], _ raw: UnsafeRawBufferPointer) -> StoredBody {
        if isImage(raw) || looksIncompressible(raw) {
            return StoredBody(data: body, compressed: false)
        }
        if let deflated = ZlibCodec.deflate(raw), deflated.count < body.count {
            return StoredBody(data: deflated, compressed: true)
        }
        return StoredBody(data: body, compressed: false)
    }

    /// The original bytes (inflated if stored compressed).
    public func decoded(limit: Int = ZlibCodec.defaultInflateLimit) throws -> [UInt8] {
        guard compressed else { return data }
        return try data.withUnsafeBytes { raw -> [UInt8] in
            try ZlibCodec.inflate(raw, limit: limit).output
        }
    }

    /// PNG, JPEG, WebP and GIF are compressed formats; deflate gains nothing on them.
    static func isImage(_ bytes: UnsafeRawBufferPointer) -> Bool {
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            guard bytes.count >= offset + magic.count else { return false }
            for (index, byte) in magic.enumerated() where bytes[offset + index] != byte { return false }
            return true
        }
        return starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            || starts([0xFF, 0xD8, 0xFF])
            || (starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8))
            || starts(Array("GIF8".utf8))
    }

    /// Bytes sampled for the entropy estimate: enough for a stable estimate (random data reads
    /// about 7.9 bits per byte at this size), cheap beside deflate.
    static let entropySampleSize = 2048
    /// Above this many bits per byte deflate saves a few percent at best.
    static let incompressibleEntropy = 7.5

    /// `c * log2(c)` for every count a sample can produce, so the estimate needs no `log2` calls.
    private static let countTimesLog2: [Double] = (0...entropySampleSize).map { $0 == 0 ? 0 : Double($0) * log2(Double($0)) }

    /// Shannon entropy of the byte histogram of the first `entropySampleSize` bytes:
    /// H = log2(n) - (1/n) * sum(c * log2(c)). Small bodies are never judged (deflate on them is
    /// cheap and the estimate unreliable).
    static func looksIncompressible(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let sampleSize = min(bytes.count, entropySampleSize)
        guard sampleSize >= 1024 else { return false }
        var histogram = [Int](repeating: 0, count: 256)
        histogram.withUnsafeMutableBufferPointer { counts in
            for index in 0..<sampleSize { counts[Int(bytes[index])] &+= 1 }
        }
        let sum = histogram.reduce(0.0) { $0 + countTimesLog2[$1] }
        let n = Double(sampleSize)
        return log2(n) - sum / n > incompressibleEntropy
    }
}
