/// A pack's id, as routes take it from `/v1/packs/{id}` and as the API shows it: a positive
/// integer JSON numbers hold exactly (openapi's `PackId`, 1 … 2^53 − 1). The store protocols
/// still take the `rawValue` (tenant scoping moves them to this type).
public struct PackID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: Int64

    /// The largest id a JSON number holds exactly (2^53 − 1).
    public static let maximum: Int64 = 9_007_199_254_740_991

    /// nil outside 1 … `maximum`.
    public init?(_ rawValue: Int64) {
        guard (1...Self.maximum).contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// A path segment in decimal digits only (no sign, no spaces, at most 16 digits); nil for
    /// anything else.
    public init?(pathSegment text: some StringProtocol) {
        let digits = text.utf8
        guard (1...16).contains(digits.count), digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let value = Int64(text) else { return nil }
        self.init(value)
    }

    public var description: String { String(rawValue) }

    public static func < (lhs: PackID, rhs: PackID) -> Bool { lhs.rawValue < rhs.rawValue }
}
