import Fetch
import Testing

/// `Retry-After` in both forms RFC 9110 allows, as the download reads it to pause a host.
@Suite struct RetryAfterTests {
    /// 2026-11-23 20:00:00 UTC.
    static let now: Int64 = 1_795_464_000

    static func delay(_ value: String) -> Duration? {
        ResponseHeaders(["Retry-After": value]).retryAfterDelay(now: now)
    }

    @Test func deltaSeconds() {
        #expect(Self.delay("7") == .seconds(7))
        #expect(Self.delay(" 0 ") == .zero)
        #expect(Self.delay("99999999") == .seconds(3600), "bounded to an hour")
        #expect(Self.delay("999999999999999999999999") == .seconds(3600))
        #expect(Self.delay("-5") == nil && Self.delay("1.5") == nil && Self.delay("soon") == nil)
        #expect(ResponseHeaders().retryAfterDelay(now: Self.now) == nil)
    }

    @Test func httpDatesInAllThreeForms() {
        #expect(Self.delay("Mon, 23 Nov 2026 20:00:30 GMT") == .seconds(30))
        #expect(Self.delay("Monday, 23-Nov-26 20:01:00 GMT") == .seconds(60))
        #expect(Self.delay("Mon Nov 23 20:00:05 2026") == .seconds(5))
        #expect(Self.delay("Mon, 23 Nov 2026 19:00:00 GMT") == .zero, "a date already past means now")
        #expect(Self.delay("Tue, 24 Nov 2026 20:00:00 GMT") == .seconds(3600), "bounded to an hour")
    }

    @Test func malformedDatesAreIgnored() {
        for text in ["Mon, 23 Nov 2026 20:00:30 CET", "Mon, 32 Nov 2026 20:00:30 GMT", "Mon, 23 Foo 2026 20:00:30 GMT",
                     "Mon, 23 Nov 2026 25:00:30 GMT", "Mon, 23 Nov 26 20:00:30 GMT", "23 Nov 2026", ""] {
            #expect(Self.delay(text) == nil, "\(text)")
        }
    }
}
