/// A moment as Unix milliseconds, written as RFC 3339 UTC with milliseconds
/// (`2026-11-22T04:30:00.250Z`): webhook deliveries are scheduled and measured below the second.
public struct PreciseTimestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var milliseconds: Int64

    public init(milliseconds: Int64) {
        self.milliseconds = milliseconds
    }

    public static func < (lhs: PreciseTimestamp, rhs: PreciseTimestamp) -> Bool { lhs.milliseconds < rhs.milliseconds }

    public var description: String { rfc3339 }

    public var rfc3339: String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = milliseconds - seconds * 1000
        let whole = Timestamp(seconds).rfc3339
        return whole.dropLast() + "." + String(fraction + 1000).dropFirst() + "Z"
    }

    /// RFC 3339, fractions to the millisecond (finer digits are dropped).
    public init?(rfc3339 text: String) {
        guard let whole = Timestamp(rfc3339: text) else { return nil }
        var fraction: Int64 = 0
        if let dot = text.firstIndex(of: "."), text.distance(from: text.startIndex, to: dot) == 19 {
            let digits = text[text.index(after: dot)...].prefix { $0.isASCII && $0.isNumber }
            for (index, digit) in digits.prefix(3).enumerated() {
                fraction += Int64(digit.wholeNumberValue ?? 0) * [100, 10, 1][index]
            }
        }
        milliseconds = whole.seconds * 1000 + fraction
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = PreciseTimestamp(rfc3339: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an RFC 3339 time"))
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rfc3339)
    }
}
