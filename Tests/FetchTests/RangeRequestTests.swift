import Fetch
import Foundation
import PackdTestSupport
import Testing

@Suite struct RangeRequestTests {
    static let file = testBody(seed: 7, size: 100_000)

    @Test func aRangeIsAnsweredWithThoseBytesAndItsContentRange() throws {
        let upstream = try ArchiveUpstream(archive: Self.file)
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let results = try harness.fetchAll([
            FetchRequest(url: upstream.url, range: RangeRequest(bytes: 1000...1999, ifMatch: "\"v1\""), maxBodyBytes: 1000),
            // Past the end: the server clamps the range to the file.
            FetchRequest(url: upstream.url, range: RangeRequest(bytes: 99_000...120_000, ifUnmodifiedSince: 1_700_000_000),
                         maxBodyBytes: 21_001),
        ])
        let first = try #require(results[0].response)
        #expect(first.status == 206 && first.body == Array(Self.file[1000...1999]))
        #expect(first.headers.contentRange == ContentRange("bytes 1000-1999/100000"))
        #expect(first.headers.etag == "\"v1\"")
        let second = try #require(results[1].response)
        #expect(second.status == 206 && second.body == Array(Self.file[99_000...]))
        #expect(second.headers.contentRange?.complete == 100_000)
        let asked = upstream.rangesAsked.sorted { ($0.range?.lowerBound ?? 0) < ($1.range?.lowerBound ?? 0) }
        #expect(asked.map(\.range) == [1000...1999, 99_000...120_000])
        #expect(asked[0].ifMatch == "\"v1\"" && asked[0].ifUnmodifiedSince == nil)
        #expect(asked[1].ifMatch == nil && asked[1].ifUnmodifiedSince == "Tue, 14 Nov 2023 22:13:20 GMT")
        #expect(asked.allSatisfy { $0.acceptEncoding == "identity" }, "a range of a compressed body would be other bytes")
    }

    @Test func aReplacedFileAnswers412AndAShortOne416() throws {
        let upstream = try ArchiveUpstream(archive: Self.file)
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        upstream.replace(with: Array(Self.file.prefix(500)), etag: "\"v2\"")
        let results = try harness.fetchAll([
            FetchRequest(url: upstream.url, range: RangeRequest(bytes: 0...99, ifMatch: "\"v1\""), maxBodyBytes: 100),
            FetchRequest(url: upstream.url, range: RangeRequest(bytes: 1000...1099, ifMatch: "\"v2\""), maxBodyBytes: 100),
        ])
        #expect(results[0].response?.status == 412)
        #expect(results[1].response?.status == 416)
        #expect(results[1].response?.headers.contentRange == ContentRange("bytes */500"))
        #expect(results[1].response?.headers.contentRange?.range == nil)
    }

    @Test func aServerIgnoringRangeIsStoppedAtItsFirstBytesNotDownloaded() throws {
        let upstream = try ArchiveUpstream(archive: Self.file)
        defer { upstream.stop() }
        // A "planet": 64 GiB declared, streamed until the client hangs up.
        upstream.setFault(.ignoreRange(declared: 64 << 30))
        let harness = try FetchHarness()
        defer { harness.close() }
        let result = try harness.fetch(FetchRequest(url: upstream.url, range: RangeRequest(bytes: 0...16_383), maxBodyBytes: 16_384))
        #expect(result.error == .rangeIgnored)
        #expect(result.error?.isTransient == false)
        #expect(result.error?.code == "range_not_supported")
        #expect(eventually { upstream.bytesSentIgnoringRange > 0 })
        // What the socket buffers took before the hang-up, nowhere near the file.
        #expect(upstream.bytesSentIgnoringRange < 64 << 20)
    }

    @Test func otherBytesOrAShortBodyAreNotTheRangeAskedFor() throws {
        let upstream = try ArchiveUpstream(archive: Self.file)
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        upstream.setFault(.wrongRange)
        let wrong = try harness.fetch(FetchRequest(url: upstream.url, range: RangeRequest(bytes: 10...19), maxBodyBytes: 10))
        #expect(wrong.error == .rangeMismatch)
        upstream.setFault(.truncate)
        let short = try harness.fetch(FetchRequest(url: upstream.url, range: RangeRequest(bytes: 10...4009), maxBodyBytes: 4000))
        #expect(short.error == .truncatedBody && short.error?.isTransient == true)
    }

    @Test func aChunked206ShorterThanItsContentRangeIsTruncated() throws {
        let upstream = try TestUpstream { _ in
            .raw(Array("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/100\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n".utf8))
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let result = try harness.fetch(FetchRequest(url: upstream.url("/a"), range: RangeRequest(bytes: 0...9), maxBodyBytes: 10))
        #expect(result.error == .truncatedBody)
    }

    @Test func aChunked200IsStoppedAtItsFirstBytes() throws {
        let chunk = "10000\r\n" + String(repeating: "x", count: 65_536) + "\r\n"
        let upstream = try TestUpstream { _ in
            .raw(Array(("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk + "0\r\n\r\n").utf8))
        }
        defer { upstream.stop() }
        let harness = try FetchHarness()
        defer { harness.close() }
        let result = try harness.fetch(FetchRequest(url: upstream.url("/a"), range: RangeRequest(bytes: 0...1_000_000),
                                                    maxBodyBytes: 1_000_001))
        #expect(result.error == .rangeIgnored)
    }

    @Test func contentRangeValuesAreParsedStrictly() {
        #expect(ContentRange("bytes 0-9/100")?.range == 0...9)
        #expect(ContentRange("bytes 0-9/*")?.complete == nil)
        #expect(ContentRange("bytes */77")?.complete == 77)
        for bad in ["bytes 9-0/100", "bytes 0-100/100", "bytes */*", "items 0-9/100", "bytes 0-9", "bytes -1-9/100", "bytes 0-9/1e3"] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
    }

    @Test func anETagWithALineBreakIsNotSent() throws {
        let harness = try FetchHarness()
        defer { harness.close() }
        let result = try harness.fetch(FetchRequest(url: "http://127.0.0.1:9/a", range: RangeRequest(bytes: 0...9, ifMatch: "\"a\"\r\nX: y")))
        #expect(result.error == .invalidHeader)
    }
}
