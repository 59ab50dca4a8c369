import Glibc

extension ResponseHeaders {
    /// How long `Retry-After` asks to wait, in either of its forms (RFC 9110 §10.2.3): delta
    /// seconds (`120`) or an HTTP-date (`Fri, 31 Dec 1999 23:59:59 GMT`, a time already past
    /// meaning "now"). Bounded by `limit`, so an upstream cannot park a host for days; nil when the
    /// header is absent or unreadable. `now` is Unix seconds (a parameter so tests can fix it).
    public func retryAfterDelay(now: Int64, limit: Duration = .seconds(3600)) -> Duration? {
        guard let text = retryAfter?.trimmingCharacters(in: " \t") else { return nil }
        let seconds: Int64
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Longer than Int64 digits saturates instead of failing: "wait very long" is the meaning.
            seconds = Int64(text.prefix(18)) ?? 0
        } else if let date = HTTPDate.parse(text) {
            seconds = max(date - now, 0)
        } else {
            return nil
        }
        return min(.seconds(seconds), limit)
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> Substring {
        var slice = Substring(self)
        while let first = slice.first, set.contains(first) { slice = slice.dropFirst() }
        while let last = slice.last, set.contains(last) { slice = slice.dropLast() }
        return slice
    }
}

extension HTTPDate {
    /// Unix seconds of an HTTP-date in any of the three forms a recipient must accept:
    /// IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT` and
    /// asctime `Sun Nov  6 08:49:37 1994`. Nil for anything else (no locale, no guessing).
    static func parse(_ text: some StringProtocol) -> Int64? {
        let words = Substring(text).split(whereSeparator: { $0 == " " || $0 == "," })
        let day: Int, month: Int, year: Int, clock: Substring
        switch words.count {
        case 6 where words[5] == "GMT":  // IMF-fixdate
            guard let d = Int(words[1]), let m = monthNumber(words[2]), let y = Int(words[3]), words[3].count == 4
            else { return nil }
            (day, month, year, clock) = (d, m, y, words[4])
        case 4 where words[3] == "GMT":  // RFC 850
            let parts = words[1].split(separator: "-")
            guard parts.count == 3, let d = Int(parts[0]), let m = monthNumber(parts[1]), let yy = Int(parts[2]),
                  parts[2].count == 2 else { return nil }
            // Two-digit years more than 50 years ahead are in the past century (RFC 9110 §5.6.7).
            (day, month, year, clock) = (d, m, yy < 70 ? 2000 + yy : 1900 + yy, words[2])
        case 5:  // asctime
            guard let m = monthNumber(words[1]), let d = Int(words[2]), let y = Int(words[4]), words[4].count == 4
            else { return nil }
            (day, month, year, clock) = (d, m, y, words[3])
        default:
            return nil
        }
        let hms = clock.split(separator: ":")
        guard hms.count == 3, let hour = Int(hms[0]), let minute = Int(hms[1]), let second = Int(hms[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              (1...31).contains(day), (1900...9999).contains(year) else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Int64(timegm(&parts))
    }

    private static func monthNumber(_ name: some StringProtocol) -> Int? {
        months.firstIndex(of: String(name)).map { $0 + 1 }
    }
}
