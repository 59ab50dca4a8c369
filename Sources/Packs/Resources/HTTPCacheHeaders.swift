import TimeFormats

/// The cache columns of a stored resource (`expires`, `modified`, `etag`, `must_revalidate`),
/// derived from response headers the way MapLibre's HTTP file source does, so a phone reading
/// our database makes the same freshness decisions it would have made itself.
///
/// Headers are untrusted: unparseable values are ignored (never an error), numbers are bounded,
/// and an oversized ETag is dropped rather than stored.
public struct HTTPCacheHeaders: Sendable, Equatable {
    /// Unix seconds after which the resource is stale; nil: unknown.
    public var expires: Int64?
    /// `Last-Modified` in Unix seconds.
    public var modified: Int64?
    public var etag: String?
    /// The resource must not be used stale (`must-revalidate` / `no-cache`).
    public var mustRevalidate: Bool

    /// ETags longer than this are not validators anyone sends in good faith.
    public static let maximumETagLength = 1024
    /// `max-age` beyond this (about 100 years) is clamped, so `now + max-age` cannot overflow.
    static let maximumAge: Int64 = 3_153_600_000

    public init(expires: Int64? = nil, modified: Int64? = nil, etag: String? = nil, mustRevalidate: Bool = false) {
        self.expires = expires
        self.modified = modified
        self.etag = etag
        self.mustRevalidate = mustRevalidate
    }

    /// Derives the columns from response headers (names case-insensitive), `now` in Unix seconds.
    /// `Cache-Control: max-age` wins over `Expires`, as HTTP requires.
    public init(headers: [(name: String, value: String)], now: Int64) {
        self.init()
        var maxAge: Int64?
        var noCache = false
        var expiresHeader: Int64?
        for (name, value) in headers {
            switch name.lowercased() {
            case "cache-control":
                for directive in value.split(separator: ",") {
                    let parts = directive.split(separator: "=", maxSplits: 1)
                    let key = parts.first.map { $0.trimmingSpaces().lowercased() } ?? ""
                    switch key {
                    case "max-age":
                        if parts.count == 2, let seconds = Self.parseDeltaSeconds(parts[1]) { maxAge = seconds }
                    case "must-revalidate", "proxy-revalidate":
                        mustRevalidate = true
                    case "no-cache", "no-store":
                        noCache = true
                    default:
                        break
                    }
                }
            case "expires":
                // An invalid Expires (often "0" or "-1") means "already expired" (RFC 9111 5.3).
                expiresHeader = HTTPDate.parse(value) ?? 0
            case "last-modified":
                modified = HTTPDate.parse(value)
            case "etag":
                let tag = value.trimmingSpaces()
                etag = tag.isEmpty || tag.utf8.count > Self.maximumETagLength ? nil : String(tag)
            default:
                break
            }
        }
        if noCache {
            mustRevalidate = true
            expires = now
        } else if let maxAge {
            expires = now + min(maxAge, Self.maximumAge)
        } else {
            expires = expiresHeader
        }
    }

    /// `delta-seconds`: digits only; huge values saturate instead of overflowing.
    static func parseDeltaSeconds<S: StringProtocol>(_ text: S) -> Int64? {
        var digits = Substring(text.trimmingSpaces())
        if digits.count >= 2, digits.first == "\"", digits.last == "\"" { digits = digits.dropFirst().dropLast() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        var value: Int64 = 0
        for byte in digits.utf8 {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - 0x30))
            if overflow1 || overflow2 { return maximumAge }
            value = sum
        }
        return value
    }
}

extension StringProtocol {
    func trimmingSpaces() -> SubSequence {
        var start = startIndex
        var end = endIndex
        while start < end, self[start] == " " || self[start] == "\t" { start = index(after: start) }
        while end > start, self[index(before: end)] == " " || self[index(before: end)] == "\t" { end = index(before: end) }
        return self[start..<end]
    }
}
