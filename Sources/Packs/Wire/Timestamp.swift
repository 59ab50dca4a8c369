import TimeFormats

/// A moment as Unix seconds, written as RFC 3339 UTC (`2026-11-22T04:30:00Z`) — the API's
/// `Timestamp`. Formatted by hand (civil-from-days), not through a locale-aware formatter.
public struct Timestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public var seconds: Int64

    public init(_ seconds: Int64) {
        self.seconds = seconds
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.seconds < rhs.seconds }

    public var description: String { rfc3339 }

    /// `YYYY-MM-DDThh:mm:ssZ`.
    public var rfc3339: String {
        let (date, time) = CivilTime.split(seconds)
        return CivilTime.digits(date.year, 4) + "-" + CivilTime.digits(date.month, 2) + "-" + CivilTime.digits(date.day, 2)
            + "T" + CivilTime.digits(time / 3600, 2) + ":" + CivilTime.digits(time / 60 % 60, 2) + ":"
            + CivilTime.digits(time % 60, 2) + "Z"
    }

    /// Parses RFC 3339 (`Z` or a `±hh:mm` offset, optional fractional seconds, which are dropped).
    public init?(rfc3339 text: String) {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count else { return nil }
            var value: Int64 = 0
            for index in range {
                guard (0x30...0x39).contains(bytes[index]) else { return nil }
                value = value * 10 + Int64(bytes[index] - 0x30)
            }
            return value
        }
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t") || bytes[10] == UInt8(ascii: " "),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...CivilTime.daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second <= 60 else { return nil }
        var index = 19
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offset: Int64 = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                  let hours = number(index + 1..<index + 3), let minutes = number(index + 4..<index + 6),
                  hours < 24, minutes < 60 else { return nil }
            offset = (hours * 60 + minutes) * 60 * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        let days = CivilTime.daysFromCivil(year: year, month: month, day: day)
        self.init(days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offset)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let parsed = Timestamp(rfc3339: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 date-time: \(text)")
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rfc3339)
    }
}
