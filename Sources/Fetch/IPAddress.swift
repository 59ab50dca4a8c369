import Glibc

/// An IPv4 or IPv6 address as the kernel hands it over, so the network-safety check works on the
/// address actually connected to rather than on a host name that DNS may answer differently later.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(UInt32)
    /// High and low 64 bits, network order folded into integers.
    case v6(UInt64, UInt64)

    /// Parses dotted IPv4 or RFC 4291 IPv6 text (no zone, no brackets); nil for anything else.
    public init?(_ text: String) {
        guard text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self = IPAddress(in6: v6)
            return
        }
        return nil
    }

    /// Reads a `sockaddr_in`/`sockaddr_in6`; nil for other families or a too-short length.
    public init?(sockaddr: UnsafePointer<sockaddr>, length: Int) {
        switch Int32(sockaddr.pointee.sa_family) {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let address = UnsafeRawPointer(sockaddr).loadUnaligned(as: sockaddr_in.self)
            self = .v4(UInt32(bigEndian: address.sin_addr.s_addr))
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let address = UnsafeRawPointer(sockaddr).loadUnaligned(as: sockaddr_in6.self)
            self = IPAddress(in6: address.sin6_addr)
        default:
            return nil
        }
    }

    private init(in6 address: in6_addr) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        withUnsafeBytes(of: address) { bytes in
            for i in 0..<8 { high = high << 8 | UInt64(bytes[i]) }
            for i in 8..<16 { low = low << 8 | UInt64(bytes[i]) }
        }
        self = .v6(high, low)
    }

    /// The IPv4 address carried inside an IPv4-mapped (`::ffff:a.b.c.d`) or NAT64 (`64:ff9b::/96`)
    /// IPv6 address: the kernel connects to that IPv4 host, so it is judged as one.
    public var embeddedIPv4: IPAddress? {
        guard case let .v6(high, low) = self else { return nil }
        let isMapped = high == 0 && low >> 32 == 0xffff
        let isNAT64 = high == 0x0064_ff9b_0000_0000 && low >> 32 == 0
        return isMapped || isNAT64 ? .v4(UInt32(truncatingIfNeeded: low)) : nil
    }

    public var description: String {
        switch self {
        case let .v4(value):
            return "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)"
        case let .v6(high, low):
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { bytes in
                for i in 0..<8 { bytes[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i))) }
                for i in 0..<8 { bytes[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i))) }
            }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
