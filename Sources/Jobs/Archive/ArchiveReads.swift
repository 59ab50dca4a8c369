import Fetch
import Packs
import TimeFormats

/// Which archive some bytes came from: its `ETag`, `Last-Modified` and size as an answer stated
/// them. Every read after the first carries it (`If-Match` with a strong ETag, else
/// `If-Unmodified-Since`), and every answer is checked against it, so bytes of two versions of an
/// archive never mix.
public struct ArchiveValidator: Sendable, Equatable {
    public var etag: String?
    public var lastModified: String?
    public var size: UInt64

    public init(etag: String?, lastModified: String?, size: UInt64) {
        self.etag = etag
        self.lastModified = lastModified
        self.size = size
    }

    /// `If-Match`: the ETag when it is strong (a weak ETag never matches `If-Match`, so sending it
    /// would make every read a 412).
    public var ifMatch: String? {
        guard let etag, !etag.hasPrefix("W/") else { return nil }
        return etag
    }

    /// `If-Unmodified-Since` (Unix seconds) for an archive without a strong ETag.
    public var ifUnmodifiedSince: Int64? {
        ifMatch == nil ? lastModified.flatMap(HTTPDate.parse) : nil
    }

    /// One text naming this version of the archive, for nodes to compare (a cluster's units agree
    /// on it before storing tiles: `JobOwner.jobOpenedArchives`).
    public var identity: String {
        "\(etag ?? "")\n\(lastModified ?? "")\n\(size)"
    }

    /// The validators every tile read from this archive is stored with (`tiles.etag`,
    /// `tiles.modified`), parsed as the store parses a response's.
    public var tileVersion: TileVersion {
        var fields: [(name: String, value: String)] = []
        if let etag { fields.append(("etag", etag)) }
        if let lastModified { fields.append(("last-modified", lastModified)) }
        let cache = HTTPCacheHeaders(headers: fields, now: 0)
        return TileVersion(etag: cache.etag, modified: cache.modified)
    }

    /// Whether an answer with `other`'s validators is a part of this archive: the same size, and
    /// the same ETag (compared weakly) or, without ETags, the same `Last-Modified`.
    public func sameArchive(as other: ArchiveValidator) -> Bool {
        guard size == other.size else { return false }
        if let etag, let theirs = other.etag { return Self.opaque(etag) == Self.opaque(theirs) }
        if let lastModified, let theirs = other.lastModified { return lastModified == theirs }
        return true
    }

    private static func opaque(_ tag: String) -> Substring {
        tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag)
    }
}

/// One read of an archive's bytes.
public struct ArchiveRead: Sendable {
    public var url: String
    public var range: ClosedRange<UInt64>
    /// The archive the bytes must come from; nil for the first read, which learns it.
    public var validator: ArchiveValidator?
    /// A revalidation's `If-None-Match`: 304 while the archive still has this ETag.
    public var ifNoneMatch: String?

    public init(url: String, range: ClosedRange<UInt64>, validator: ArchiveValidator? = nil, ifNoneMatch: String? = nil) {
        self.url = url
        self.range = range
        self.validator = validator
        self.ifNoneMatch = ifNoneMatch
    }

    /// A 206's headers (lower-case names) and body read against this request: the bytes and the
    /// archive's validators, or `.replaced` when they are of another archive. The transport
    /// already checked that the range is the one asked for (clamped only at the file's end).
    public func partial(headers: [String: String], body: [UInt8]) -> ArchiveReadResult {
        guard let contentRange = headers["content-range"].flatMap(ContentRange.init), let answered = contentRange.range,
              let size = contentRange.complete else {
            return .failed(.invalid(url: url, detail: "the server's 206 has no Content-Range with the archive's size"))
        }
        let validator = ArchiveValidator(etag: headers["etag"], lastModified: headers["last-modified"], size: size)
        if let expected = self.validator, !expected.sameArchive(as: validator) {
            return .replaced("the archive's validators changed (ETag \(expected.etag ?? "none") → \(validator.etag ?? "none"), "
                             + "\(expected.size) → \(size) bytes)")
        }
        return .bytes(ArchiveBytes(body: body, range: answered, validator: validator, headers: headers))
    }

    /// What a status other than 206 means for an archive read.
    public func failure(status: Int) -> ArchiveReadResult {
        switch status {
        case 412: .replaced("the server answered 412: the archive is not the one read so far")
        case 416: .replaced("the server answered 416 for bytes \(range.lowerBound)-\(range.upperBound)")
        case 401, 403: .failed(.unauthorized(url: url, status: status))
        case 404, 410, 204: .failed(.unavailable(url: url, status: status, detail: "the archive is not there (HTTP \(status))"))
        default: .failed(.unavailable(url: url, status: status, detail: "the archive's server answered HTTP \(status)"))
        }
    }
}

/// Bytes of an archive as an answer brought them.
public struct ArchiveBytes: Sendable {
    public var body: [UInt8]
    /// Where they lie in the archive.
    public var range: ClosedRange<UInt64>
    public var validator: ArchiveValidator
    /// The answer's headers, lower-case names (the caching ones are stored with what it brought).
    public var headers: [String: String]

    public init(body: [UInt8], range: ClosedRange<UInt64>, validator: ArchiveValidator, headers: [String: String]) {
        self.body = body
        self.range = range
        self.validator = validator
        self.headers = headers
    }
}

public enum ArchiveReadResult: Sendable {
    case bytes(ArchiveBytes)
    /// 304 to `ifNoneMatch`: the archive is unchanged.
    case notModified(headers: [String: String])
    /// The archive is not the one the read named (412, other validators, 416): start again from
    /// its header.
    case replaced(String)
    case failed(ArchiveFailure)
    /// The job stopped first.
    case stopped
}

/// Why an archive cannot be read. Each becomes a pack error with a precise code.
public enum ArchiveFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered a range request with the whole file (200): stopped at its first bytes.
    case rangeNotSupported(url: String)
    case unavailable(url: String, status: Int?, detail: String)
    case unauthorized(url: String, status: Int)
    case hostNotAllowed(url: String)
    /// Not a PMTiles archive packd can read: the detail names the field or section.
    case invalid(url: String, detail: String)
    /// Replaced again and again while being read.
    case unstable(url: String, detail: String)

    public var description: String { packError.description }

    public var packError: PackError {
        switch self {
        case .rangeNotSupported(let url):
            PackError(.rangeNotSupported, "the archive's server ignores Range requests (it answered 200 with the whole "
                      + "file); packd reads archives only with ranges and stopped at the first bytes", url: url, status: 200)
        case .unavailable(let url, let status, let detail): PackError(.sourceUnavailable, detail, url: url, status: status)
        case .unauthorized(let url, let status): PackError(.upstreamUnauthorized, "the upstream refused the request", url: url, status: status)
        case .hostNotAllowed(let url): PackDownload.addressRefused(url)
        case .invalid(let url, let detail): PackError(.invalidSource, "not a PMTiles archive packd can read: \(detail)", url: url)
        case .unstable(let url, let detail): PackError(.sourceUnavailable, detail, url: url)
        }
    }
}

/// How a job reads archive bytes: through its upstream resolver (downloads, revalidations) or the
/// API's upstream client (estimates). Loop thread; `then` runs once, later, on the loop thread.
public protocol ArchiveRangeSource: AnyObject {
    func read(_ read: ArchiveRead, then: @escaping (ArchiveReadResult) -> Void)
}
