import TimeFormats

/// A calendar month in UTC (`2026-05`): the period monthly quotas (tiles downloaded, bytes
/// served) count over. Months start at 00:00:00 UTC on their first day.
public struct UsageMonth: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let year: Int
    /// 1 to 12.
    public let month: Int

    public init?(year: Int, month: Int) {
        guard (1970...9999).contains(year), (1...12).contains(month) else { return nil }
        self.year = year
        self.month = month
    }

    /// The month holding `unixSeconds`.
    public init(containing unixSeconds: Int64) {
        let date = CivilTime.split(max(0, min(unixSeconds, 253_402_300_799))).date
        year = Int(date.year)
        month = Int(date.month)
    }

    /// `YYYY-MM` (the `month` query parameter), or nil.
    public init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard bytes.count == 7, bytes[4] == UInt8(ascii: "-"),
              bytes.enumerated().allSatisfy({ $0.offset == 4 || (0x30...0x39).contains($0.element) }),
              let year = Int(String(decoding: bytes[0..<4], as: UTF8.self)),
              let month = Int(String(decoding: bytes[5..<7], as: UTF8.self)) else { return nil }
        self.init(year: year, month: month)
    }

    /// Unix seconds of the month's first second.
    public var start: Int64 {
        CivilTime.daysFromCivil(year: Int64(year), month: Int64(month), day: 1) * 86_400
    }

    /// The month after this one.
    public var next: UsageMonth {
        month == 12 ? UsageMonth(uncheckedYear: year + 1, month: 1) : UsageMonth(uncheckedYear: year, month: month + 1)
    }

    /// Unix seconds of the first second after the month: when its monthly counts start again.
    public var end: Int64 { next.start }

    private init(uncheckedYear year: Int, month: Int) {
        self.year = year
        self.month = month
    }

    public var description: String {
        CivilTime.digits(Int64(year), 4) + "-" + CivilTime.digits(Int64(month), 2)
    }

    public static func < (left: UsageMonth, right: UsageMonth) -> Bool {
        (left.year, left.month) < (right.year, right.month)
    }
}
