import Packs
import Testing
@testable import Packs
import TimeFormats

@Suite struct HTTPCacheHeadersTests {
    // 1994-11-06 08:49:37 UTC, the RFC's example date.
    let rfcExample: Int64 = 784_111_777

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ])
    func parsesTheThreeHTTPDateFormats(_ text: String) {
        #expect(HTTPDate.parse(text) == rfcExample)
    }

    @Test func parsesDatesAcrossLeapYearsAndTheEpoch() {
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 12:00:00 GMT") == 951_825_600)
        #expect(HTTPDate.parse("Sat, 01 Mar 2025 00:00:00 GMT") == 1_740_787_200)
    }

    @Test(arguments: ["", "0", "-1", "yesterday", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
                      "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 06 Nov 99999 08:49:37 GMT", String(repeating: "9", count: 5000)])
    func rejectsMalformedDates(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test func maxAgeWinsOverExpiresAndSetsExpiryFromNow() {
        let headers = HTTPCacheHeaders(headers: [
            ("Expires", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ("Cache-Control", "public, max-age=3600, must-revalidate"),
            ("ETag", "\"abc\""),
            ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
        ], now: 1_000_000)
        #expect(headers == HTTPCacheHeaders(expires: 1_003_600, modified: rfcExample, etag: "\"abc\"", mustRevalidate: true))
    }

    @Test func expiresAloneAndInvalidExpiresMeansExpired() {
        let dated = HTTPCacheHeaders(headers: [("expires", "Sun, 06 Nov 1994 08:49:37 GMT")], now: 5)
        #expect(dated.expires == rfcExample)
        #expect(dated.mustRevalidate == false)
        let invalid = HTTPCacheHeaders(headers: [("Expires", "0")], now: 5)
        #expect(invalid.expires == 0)
        let none = HTTPCacheHeaders(headers: [("Content-Type", "image/png")], now: 5)
        #expect(none == HTTPCacheHeaders())
    }

    @Test func noCacheMeansRevalidateNow() {
        let headers = HTTPCacheHeaders(headers: [("Cache-Control", "no-cache"), ("Cache-Control", "max-age=60")], now: 77)
        #expect(headers.expires == 77)
        #expect(headers.mustRevalidate)
    }

    @Test func hostileValuesAreBoundedNotTrusted() {
        let huge = HTTPCacheHeaders(headers: [("Cache-Control", "max-age=99999999999999999999999999")], now: 10)
        #expect(huge.expires == 10 + HTTPCacheHeaders.maximumAge)
        let garbage = HTTPCacheHeaders(headers: [("Cache-Control", "max-age=-5, max-age=abc")], now: 10)
        #expect(garbage.expires == nil)
        let longTag = HTTPCacheHeaders(headers: [("ETag", String(repeating: "x", count: 5000))], now: 10)
        #expect(longTag.etag == nil)
    }
}
