/// Protobuf bytes that do not parse: a bad varint, a length past the buffer, an unknown wire type.
public enum ProtobufFailure: Error, Equatable, Sendable {
    case malformed(String)
}

/// Reads protobuf wire format from a borrowed buffer without copying.
public struct ProtobufReader {
    public enum Value {
        case varint(UInt64)
        case bytes(UnsafeRawBufferPointer)
        case fixed
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
        case 1: try skip(8); return (number, .fixed)
        case 5: try skip(4); return (number, .fixed)
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

    private mutating func skip(_ count: Int) throws(ProtobufFailure) {
        guard bytes.count - position >= count else { throw .malformed("truncated fixed field") }
        position += count
    }
}
