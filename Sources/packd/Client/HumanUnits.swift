/// Numbers as a person reads them at a terminal: `1,234,567`, `18.5 MB` (SI, as download tools
/// show rates), `1:02:03`.
enum HumanUnits {
    static func count(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    static func bytes(_ value: Int64) -> String {
        guard value >= 1000 else { return "\(value) B" }
        var scaled = Double(value)
        for unit in ["kB", "MB", "GB", "TB", "PB"] {
            scaled /= 1000
            if scaled < 999.95 || unit == "PB" { return oneDecimal(scaled) + " " + unit }
        }
        return "\(value) B"
    }

    static func rate(_ bytesPerSecond: Int64) -> String { bytes(bytesPerSecond) + "/s" }

    /// `m:ss` or `h:mm:ss`.
    static func duration(_ seconds: Int64) -> String {
        let seconds = max(seconds, 0)
        let hours = seconds / 3600, minutes = seconds / 60 % 60, rest = seconds % 60
        let twoDigits = { (value: Int64) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(rest))" : "\(minutes):\(twoDigits(rest))"
    }

    /// `12.3` (one decimal, rounded half up).
    static func oneDecimal(_ value: Double) -> String {
        let tenths = Int64((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
