/// Unsigned LEB128 varints, as protobuf and PMTiles directories use them.
public enum Varint {
    public static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// The varint starting at `position`, which moves past it; nil when the bytes end first or the
    /// varint runs past 64 bits (the position is then meaningless).
    @inlinable
    public static func decode<Bytes: RandomAccessCollection>(_ bytes: Bytes, at position: inout Int) -> UInt64?
    where Bytes.Element == UInt8, Bytes.Index == Int {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.endIndex, shift < 64 {
            let byte = bytes[position]
            position += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        return nil
    }

    /// Reads varints from bytes; `next()` is nil at the end or on a malformed (over-long) varint.
    public struct Reader {
        private let bytes: [UInt8]
        private var position = 0

        public init(_ bytes: [UInt8]) { self.bytes = bytes }

        public mutating func next() -> UInt64? {
            Varint.decode(bytes, at: &position)
        }
    }
}
