import TimeFormats

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
