/// A CIDR block (`10.0.0.0/8`, `fc00::/7`). Used both for the built-in list of addresses packd
/// refuses and for the ranges an operator explicitly allows.
public struct AddressRange: Hashable, Sendable, CustomStringConvertible {
    public let network: IPAddress
    public let prefixLength: Int

    /// Parses `address/prefix`, or a bare address as a single-host range. Nil when malformed or
    /// the prefix is out of range for the family.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        let maxLength: Int
        if case .v4 = address { maxLength = 32 } else { maxLength = 128 }
        var length = maxLength
        if parts.count == 2 {
            guard parts[1].utf8.count <= 3, let parsed = Int(parts[1]), (0...maxLength).contains(parsed) else { return nil }
            length = parsed
        }
        self.network = address
        self.prefixLength = length
    }

    public func contains(_ address: IPAddress) -> Bool {
        switch (network, address) {
        case let (.v4(net), .v4(value)):
            guard prefixLength > 0 else { return true }
            let mask = UInt32.max << UInt32(32 - prefixLength)
            return net & mask == value & mask
        case let (.v6(netHigh, netLow), .v6(high, low)):
            let highBits = min(prefixLength, 64)
            let lowBits = max(prefixLength - 64, 0)
            let highMask: UInt64 = highBits == 0 ? 0 : UInt64.max << UInt64(64 - highBits)
            let lowMask: UInt64 = lowBits == 0 ? 0 : UInt64.max << UInt64(64 - lowBits)
            return netHigh & highMask == high & highMask && netLow & lowMask == low & lowMask
        default:
            return false
        }
    }

    public var description: String { "\(network)/\(prefixLength)" }
}
