import CZlib

/// A reusable zlib/gzip decoder with an output cap. Exports inflate every stored tile (to turn
/// MapLibre's zlib rows into gzip members, or into raw images), so one `z_stream` is reset per
/// tile instead of allocated, and the output buffer is reused. zlib keeps a pointer back to the
/// stream, hence the allocated, never-moving `z_stream`.
public final class Inflater {
    public enum Failure: Error, Equatable {
        /// Not a zlib/gzip stream, a bad checksum, or a stream that ends early.
        case corrupt(String)
        /// The inflated bytes would exceed the cap: a zip bomb, or simply not a tile.
        case tooLarge(limit: Int)
        /// Bytes follow the end of the compressed stream.
        case trailingBytes
    }

    /// What the input is wrapped in; the window bits zlib needs for it.
    public enum Wrapping {
        /// `raw` is a bare deflate stream (a zlib stream without its 2-byte header and Adler-32).
        case zlib, gzip, raw
        var windowBits: Int32 {
            switch self {
            case .zlib: return 15
            case .gzip: return 15 + 16
            case .raw: return -15
            }
        }
    }

    private let stream: UnsafeMutablePointer<z_stream>
    private let wrapping: Wrapping
    /// The inflated bytes of the last `inflate` call (only the first `count` are valid).
    public private(set) var output: [UInt8]
    public private(set) var count = 0

    public init(_ wrapping: Wrapping) {
        self.wrapping = wrapping
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // Only fails on out-of-memory or a mismatched zlib; both would fail every later call too.
        _ = packd_inflateInit2(stream, wrapping.windowBits)
        output = [UInt8](repeating: 0, count: 64 * 1024)
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Inflates one complete stream; afterwards `output[0..<count]` holds the result. zlib checks
    /// the Adler-32 / CRC-32 trailer itself, so a damaged row is an error here, not a bad tile.
    public func inflate(_ input: UnsafeRawBufferPointer, limit: Int) throws(Failure) {
        guard inflateReset(stream) == Z_OK else { throw .corrupt("inflateReset failed") }
        count = 0
        guard let base = input.baseAddress, input.count > 0 else { throw .corrupt("empty stream") }
        guard input.count <= Int(UInt32.max) else { throw .tooLarge(limit: limit) }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        while true {
            if count == output.count {
                guard output.count < limit else { throw .tooLarge(limit: limit) }
                output.append(contentsOf: repeatElement(0, count: min(output.count, limit - output.count)))
            }
            let result = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
                stream.pointee.next_out = buffer.baseAddress! + count
                stream.pointee.avail_out = uInt(buffer.count - count)
                let result = CZlib.inflate(stream, Z_NO_FLUSH)
                count = buffer.count - Int(stream.pointee.avail_out)
                return result
            }
            switch result {
            case Z_STREAM_END:
                if stream.pointee.avail_in != 0 { throw .trailingBytes }
                if count > limit { throw .tooLarge(limit: limit) }
                return
            case Z_OK:
                continue
            case Z_BUF_ERROR:
                // No progress possible: either the output is full (grow and go on) or the input
                // ended before the stream did.
                if count < output.count { throw .corrupt("truncated stream") }
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(result)"
                throw .corrupt(message)
            }
        }
    }

    /// Inflates and copies the result out (for callers that keep it).
    public func inflated(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        var failure: Failure?
        input.withUnsafeBytes { raw in
            do throws(Failure) { try inflate(raw, limit: limit) } catch { failure = error }
        }
        if let failure { throw failure }
        return Array(output[0..<count])
    }
}
