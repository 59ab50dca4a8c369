import Glibc

/// What both log formats share: an RFC 3339 UTC timestamp and one `write(2)` per line to
/// standard error. A single write keeps lines from different threads whole, and skipping stdio
/// keeps the per-request access line cheap (no stream lock, no flush).
enum LogOutput {
    static func write(_ line: String) {
        var line = line
        line.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    static func write(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(STDERR_FILENO, base + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }

    static func timestamp() -> String {
        var out = [UInt8]()
        appendTimestamp(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `2026-11-22T03:58:32.123Z`, formatted by hand: gmtime_r plus digits, no locale or strftime.
    static func appendTimestamp(to out: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int32, _ width: Int) {
            var divisor: Int32 = 1
            for _ in 1..<width { divisor *= 10 }
            var value = value
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                value %= divisor
                divisor /= 10
            }
        }
        digits(parts.tm_year + 1900, 4); out.append(UInt8(ascii: "-"))
        digits(parts.tm_mon + 1, 2); out.append(UInt8(ascii: "-"))
        digits(parts.tm_mday, 2); out.append(UInt8(ascii: "T"))
        digits(parts.tm_hour, 2); out.append(UInt8(ascii: ":"))
        digits(parts.tm_min, 2); out.append(UInt8(ascii: ":"))
        digits(parts.tm_sec, 2); out.append(UInt8(ascii: "."))
        digits(Int32(now.tv_nsec / 1_000_000), 3); out.append(UInt8(ascii: "Z"))
    }
}
