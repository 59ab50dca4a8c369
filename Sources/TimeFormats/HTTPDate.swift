/// HTTP-dates (RFC 9110 §5.6.7) for the whole program: `Date`, `Last-Modified`, `Expires`,
/// `If-Modified-Since`, `Retry-After`. Formatted by hand as IMF-fixdate (no C locale, no
/// `strftime`, so a process-wide `setlocale` can never change what goes on the wire), and parsed
/// strictly in the three forms a recipient must accept. (libcurl's `curl_getdate` reads those
/// too, but also other time zones and partial dates — `23 Nov 2026`, `… CET` — which would turn
/// a malformed `Retry-After` into a pause of the host.)
public enum HTTPDate {
    /// The latest moment an HTTP-date can name (9999-12-31 23:59:59 UTC).
    public static let latest: Int64 = 253_402_300_799

    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) of Unix seconds, clamped to 1970…9999.
    public static func format(_ unixSeconds: Int64) -> String {
        String(decoding: formatBytes(unixSeconds), as: UTF8.self)
    }

    /// The same as bytes, for writers that assemble a response head.
    public static func formatBytes(_ unixSeconds: Int64) -> [UInt8] {
        let seconds = min(max(unixSeconds, 0), latest)
        let (date, time) = CivilTime.split(seconds)
        var out: [UInt8] = []
        out.reserveCapacity(29)
        out += weekdays[Int((seconds / 86_400) % 7)].utf8
        out += ", ".utf8
        out += CivilTime.digits(date.day, 2).utf8
        out.append(UInt8(ascii: " "))
        out += months[Int(date.month) - 1].utf8
        out.append(UInt8(ascii: " "))
        out += CivilTime.digits(date.year, 4).utf8
        out.append(UInt8(ascii: " "))
        out += (CivilTime.digits(time / 3600, 2) + ":" + CivilTime.digits(time / 60 % 60, 2) + ":"
            + CivilTime.digits(time % 60, 2)).utf8
        out += " GMT".utf8
        return out
    }

    /// Unix seconds of an HTTP-date in any of its three forms — IMF-fixdate
    /// `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`, asctime
    /// `Sun Nov  6 08:49:37 1994` — nil for anything else (no other zone, no guessing). Input
    /// longer than 64 bytes is refused unread: no HTTP-date is that long.
    public static func parse(_ text: some StringProtocol) -> Int64? {
        guard text.utf8.count <= 64 else { return nil }
        let words = Substring(text).split(whereSeparator: { $0 == " " || $0 == "," })
        let day: Int64, month: Int64, year: Int64, clock: Substring
        switch words.count {
        case 6 where words[5] == "GMT":  // IMF-fixdate
            guard let d = Int64(words[1]), let m = monthNumber(words[2]), let y = Int64(words[3]), words[3].count == 4
            else { return nil }
            (day, month, year, clock) = (d, m, y, words[4])
        case 4 where words[3] == "GMT":  // RFC 850
            let parts = words[1].split(separator: "-")
            guard parts.count == 3, let d = Int64(parts[0]), let m = monthNumber(parts[1]), let yy = Int64(parts[2]),
                  parts[2].count == 2 else { return nil }
            // Two-digit years more than 50 years ahead are in the past century (RFC 9110 §5.6.7).
            (day, month, year, clock) = (d, m, yy < 70 ? 2000 + yy : 1900 + yy, words[2])
        case 5:  // asctime
            guard let m = monthNumber(words[1]), let d = Int64(words[2]), let y = Int64(words[4]), words[4].count == 4
            else { return nil }
            (day, month, year, clock) = (d, m, y, words[3])
        default:
            return nil
        }
        let hms = clock.split(separator: ":")
        guard hms.count == 3, let hour = Int64(hms[0]), let minute = Int64(hms[1]), let second = Int64(hms[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              (1970...9999).contains(year), (1...CivilTime.daysIn(month: month, year: year)).contains(day) else { return nil }
        return CivilTime.daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
    }

    private static func monthNumber(_ name: some StringProtocol) -> Int64? {
        months.firstIndex(of: String(name)).map { Int64($0) + 1 }
    }
}
