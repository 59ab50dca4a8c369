import Packs
import TimeFormats

/// Some bytes of a file, asked for only while the file is the one its validators name: PMTiles
/// archives are read this way, a few ranges at a time, and an archive replaced meanwhile must
/// answer 412 rather than bytes of another file.
public struct RangeRequest: Sendable, Equatable {
    /// The bytes wanted, first and last included (`Range: bytes=first-last`).
    public var bytes: ClosedRange<UInt64>
    /// A strong ETag, sent as `If-Match` (a weak one never matches `If-Match`: give nil and
    /// `ifUnmodifiedSince` instead).
    public var ifMatch: String?
    /// Unix seconds of the file's `Last-Modified`, sent as `If-Unmodified-Since`.
    public var ifUnmodifiedSince: Int64?

    public init(bytes: ClosedRange<UInt64>, ifMatch: String? = nil, ifUnmodifiedSince: Int64? = nil) {
        self.bytes = bytes
        self.ifMatch = ifMatch
        self.ifUnmodifiedSince = ifUnmodifiedSince
    }

    /// How many bytes the range holds.
    public var count: UInt64 { bytes.upperBound - bytes.lowerBound + 1 }

    /// The request headers, beside `Accept-Encoding: identity` (a range of a compressed
    /// representation would be bytes of something else).
    var headerLines: [String] {
        var lines = ["Range: bytes=\(bytes.lowerBound)-\(bytes.upperBound)"]
        if let ifMatch { lines.append("If-Match: \(ifMatch)") }
        if let ifUnmodifiedSince { lines.append("If-Unmodified-Since: \(HTTPDate.format(ifUnmodifiedSince))") }
        return lines
    }
}

/// A `Content-Range` value: `bytes first-last/complete` (`complete` nil for `*`), or, on a 416,
/// `bytes */complete` (`range` nil).
public struct ContentRange: Sendable, Equatable {
    public let range: ClosedRange<UInt64>?
    public let complete: UInt64?

    public init?(_ value: String) {
        let text = value.trimmingASCIIBlanks
        guard text.hasPrefix("bytes "), case let rest = text.dropFirst(6), let slash = rest.firstIndex(of: "/") else {
            return nil
        }
        let span = rest[..<slash]
        let size = rest[rest.index(after: slash)...]
        if size == "*" {
            complete = nil
        } else {
            guard let value = Self.number(size) else { return nil }
            complete = value
        }
        if span == "*" {
            guard complete != nil else { return nil }
            range = nil
            return
        }
        let bounds = span.split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Self.number(bounds[0]), let last = Self.number(bounds[1]), first <= last,
              complete.map({ last < $0 }) ?? true else { return nil }
        range = first...last
    }

    /// Up to 19 digits, nothing else (no sign, no blanks).
    private static func number(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return UInt64(text)
    }
}

extension FetchResponse {
    /// A response packd made itself (the TileJSON it derives from an archive), stored as a fetched one is.
    public init(status: Int, headers: ResponseHeaders, body: [UInt8], url: String) {
        self.init(status: status, headers: headers, body: body, effectiveURL: url, redirects: 0)
    }
}

extension ResponseHeaders {
    /// The answer's `Content-Range`, parsed (nil when absent or malformed).
    public var contentRange: ContentRange? { self["content-range"].flatMap(ContentRange.init) }
}

extension Transfer {
    /// The status code of a status line (`HTTP/1.1 206 Partial Content`, `HTTP/2 200`), else nil.
    static func statusCode(_ line: UnsafeRawBufferPointer) -> Int? {
        guard let space = line.firstIndex(of: UInt8(ascii: " ")), line.count >= space + 4 else { return nil }
        let digits = line[(space + 1)...(space + 3)]
        guard digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// What is wrong with the answer to a range request as its body starts (nil: nothing, or not a
    /// range request, or a status whose body is not the file's — 412, 416, 404… — which the
    /// caller reads): a 200 is the whole file, stopped at its first bytes instead of downloaded;
    /// a 206 must carry the range asked for (ending earlier only at the end of the file) and not
    /// be content-encoded.
    func rangeProblem(status: Int) -> FetchError? {
        guard let asked = request.range?.bytes else { return nil }
        switch status {
        case 200:
            return .rangeIgnored
        case 206:
            guard let answered = headers.contentRange?.range, answered.lowerBound == asked.lowerBound,
                  answered.upperBound <= asked.upperBound else { return .rangeMismatch }
            if let encoding = headers.contentEncoding, encoding.lowercased() != "identity" { return .rangeMismatch }
            return nil
        default:
            return nil
        }
    }

    /// A finished answer to a range request: its body must be exactly the range it announced.
    func completedRangeProblem(status: Int) -> FetchError? {
        guard request.range != nil else { return nil }
        if let problem = rangeProblem(status: status) { return problem }
        guard status == 206, let answered = headers.contentRange?.range else { return nil }
        return UInt64(body.count) == answered.upperBound - answered.lowerBound + 1 ? nil : .truncatedBody
    }
}

extension String {
    fileprivate var trimmingASCIIBlanks: Substring {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
