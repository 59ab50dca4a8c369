import Server
import Testing

/// The `Range` parser and the conditional answer of an immutable file, exhaustively on small
/// sizes: every answer is checked against RFC 9110's rules written out independently below.
@Suite struct ByteRangeTests {
    @Test func parsesSingleRangesAndIgnoresTheRest() {
        #expect(ByteRange.parse("bytes=0-99") == .bounded(first: 0, last: 99))
        #expect(ByteRange.parse("Bytes = 5-") == .from(5))
        #expect(ByteRange.parse("bytes=-10") == .suffix(10))
        #expect(ByteRange.parse("bytes= 7-7 ") == .bounded(first: 7, last: 7))
        #expect(ByteRange.parse("bytes=3-4,") == .bounded(first: 3, last: 4))
        for ignored in ["bytes=5-3", "bytes=-", "bytes=", "items=0-1", "bytes=0-1,3-4", "bytes=a-b", "bytes=+1-2", "bytes=1-2-3",
                        "bytes=99999999999999999999-", "0-1", "bytes=-0x10", "bytes=1 -2", String(repeating: "b", count: 300)] {
            #expect(ByteRange.parse(ignored) == nil, "\(ignored)")
        }
    }

    @Test func resolvesAgainstEverySizeAsRFC9110Says() {
        for size in 0...12 {
            for first in 0...14 {
                for last in first...15 {
                    let bounded = ByteRange.bounded(first: first, last: last).resolve(size: size)
                    #expect(bounded == (first < size ? first..<min(last + 1, size) : nil), "\(first)-\(last) of \(size)")
                }
                #expect(ByteRange.from(first).resolve(size: size) == (first < size ? first..<size : nil))
                #expect(ByteRange.suffix(first).resolve(size: size) == (first > 0 && size > 0 ? max(0, size - first)..<size : nil))
            }
        }
    }

    @Test func conditionsDecideTheAnswer() {
        let etag = "\"abc\""
        func answer(_ fields: [(String, String)], method: HTTPMethod = .get) -> ImmutableFileAnswer {
            ImmutableFileAnswer.decide(method: method, headers: HTTPHeaders(fields), etag: etag, size: 100)
        }
        #expect(answer([]) == .whole)
        #expect(answer([("If-None-Match", "\"abc\"")]) == .notModified)
        #expect(answer([("If-None-Match", "\"x\", W/\"abc\"")]) == .notModified)
        #expect(answer([("If-None-Match", "*")]) == .notModified)
        #expect(answer([("If-None-Match", "\"x\"")]) == .whole)
        // If-None-Match is evaluated before Range.
        #expect(answer([("If-None-Match", "\"abc\""), ("Range", "bytes=0-1")]) == .notModified)
        #expect(answer([("Range", "bytes=10-19")]) == .partial(10..<20))
        #expect(answer([("Range", "bytes=10-19")], method: .head) == .partial(10..<20))
        #expect(answer([("Range", "bytes=100-")]) == .unsatisfiable)
        #expect(answer([("Range", "bytes=-0")]) == .unsatisfiable)
        #expect(answer([("Range", "bytes=10-19"), ("If-Range", "\"abc\"")]) == .partial(10..<20))
        #expect(answer([("Range", "bytes=10-19"), ("If-Range", "\"old\"")]) == .whole)
        #expect(answer([("Range", "bytes=10-19"), ("If-Range", "W/\"abc\"")]) == .whole)
        #expect(answer([("Range", "bytes=10-19"), ("If-Range", "Fri, 27 Nov 2026 10:00:00 GMT")]) == .whole)
        #expect(answer([("Range", "bytes=10-19")], method: .post) == .whole)
        #expect(ImmutableFileAnswer.contentRange(10..<20, size: 100) == "bytes 10-19/100")
        #expect(ImmutableFileAnswer.unsatisfiedRange(size: 100) == "bytes */100")
    }
}
