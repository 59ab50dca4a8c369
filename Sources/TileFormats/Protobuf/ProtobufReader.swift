/// Protobuf bytes that do not parse: a bad varint, a length past the buffer, an unknown wire type.
public enum ProtobufFailure: Error, Equatable, Sendable {
    case malformed(String)
}

/// Reads protobuf wire format from a borrowed buffer without copying.
public struct ProtobufReader {
    public enum Value {
        case varint(UInt64)
        case bytes(UnsafeRawBufferPointer)
        /// Wire type 5 (`fixed32`, `sfixed32`, `float`), little-endian.
        case fixed32(UInt32)
        /// Wire type 1 (`fixed64`, `sfixed64`, `double`), little-endian.
        case fixed64(UInt64)
    }

    private let bytes: UnsafeRawBufferPointer
    private var position = 0

    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The next varint, nil at the end of the buffer.
    public mutating func nextVarint() throws(ProtobufFailure) -> UInt64? {
        guard position < bytes.count else { return nil }
        guard let value = Varint.decode(bytes, at: &position) else { throw .malformed("bad varint") }
        return value
    }

    public mutating func nextField() throws(ProtobufFailure) -> (number: UInt64, value: Value)? {
        guard let key = try nextVarint() else { return nil }
        let number = key >> 3
        switch key & 7 {
        case 0:
            guard let value = try nextVarint() else { throw .malformed("truncated varint") }
            return (number, .varint(value))
        case 1: return (number, .fixed64(try fixed(8)))
        case 5: return (number, .fixed32(UInt32(truncatingIfNeeded: try fixed(4))))
        case 2:
            guard let length = try nextVarint(), length <= UInt64(bytes.count - position) else {
                throw .malformed("length beyond the buffer")
            }
            let start = position
            position += Int(length)
            return (number, .bytes(UnsafeRawBufferPointer(rebasing: bytes[start..<position])))
        default:
            throw .malformed("unsupported wire type \(key & 7)")
        }
    }

    /// The next `count` bytes as a little-endian integer.
    private mutating func fixed(_ count: Int) throws(ProtobufFailure) -> UInt64 {
        guard bytes.count - position >= count else { throw .malformed("truncated fixed field") }
        var value: UInt64 = 0
        for index in 0..<count { value |= UInt64(bytes[position + index]) << (8 * UInt64(index)) }
        position += count
        return value
    }
}
