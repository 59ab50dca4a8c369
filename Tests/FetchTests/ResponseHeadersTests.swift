@testable import Fetch
import Testing

/// Header lines exactly as curl hands them to the header callback.
@Suite struct ResponseHeadersTests {
    func parsed(_ lines: [String]) -> ResponseHeaders {
        var headers = ResponseHeaders()
        for line in lines {
            Array(line.utf8).withUnsafeBytes { headers.parse(line: $0) }
        }
        return headers
    }

    @Test func keptNamesAreMatchedInAnyCaseAndValuesTrimmed() {
        let headers = parsed([
            "HTTP/1.1 200 OK\r\n", "ETag:  \"abc\"\t\r\n", "CONTENT-TYPE: application/x-protobuf\r\n",
            "cache-control:max-age=60\r\n", "Last-Modified: Tue, 03 Nov 2026 10:00:00 GMT\r\n", "\r\n",
        ])
        #expect(headers.etag == "\"abc\"")
        #expect(headers.contentType == "application/x-protobuf")
        #expect(headers.cacheControl == "max-age=60")
        #expect(headers.lastModified == "Tue, 03 Nov 2026 10:00:00 GMT")
        #expect(headers["Etag"] == "\"abc\"")
    }

    /// Nothing else an upstream sends travels on: not cookies, not an echoed token, not a name
    /// that only starts like a kept one; an over-long value is dropped rather than cut.
    @Test func otherHeadersAndOverlongValuesAreDropped() {
        let headers = parsed([
            "Set-Cookie: session=secret\r\n", "X-Token: abc\r\n", "ETagX: 1\r\n", "Age\r\n", ": empty\r\n",
            "Expires: " + String(repeating: "x", count: ResponseHeaders.maxValueBytes + 1) + "\r\n",
        ])
        #expect(headers == ResponseHeaders())
        #expect(headers["set-cookie"] == nil)
    }

    @Test(arguments: [
        ("Content-Length: 20480\r\n", 20480 as Int?), ("content-length:0\r\n", 0), ("CONTENT-LENGTH:  7 \r\n", 7),
        ("Content-Length: -1\r\n", nil), ("Content-Length: 12a\r\n", nil), ("Content-Length: \r\n", nil),
        ("Content-Type: 5\r\n", nil), ("Content-Length: 9999999999999999999\r\n", nil),
    ])
    func declaredLengthIsReadFromDigitsOnly(_ line: String, _ expected: Int?) {
        #expect(Array(line.utf8).withUnsafeBytes { Transfer.contentLength($0) } == expected)
    }
}
