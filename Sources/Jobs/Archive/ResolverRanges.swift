import Fetch

/// Archive reads through a job's `UpstreamResolver`: each read a range request with the
/// archive's validator, retried, paused and limited exactly as tile requests are (the fetcher's
/// per-host limits, `Retry-After`, the job's transfer owner). Loop thread.
final class ResolverRanges: ArchiveRangeSource {
    private let resolver: UpstreamResolver
    private let settings: DownloadSettings
    private let owner: UInt64
    /// Every answered attempt's body size: a pack's `archive_requests` and `archive_bytes`.
    var onAnswer: ((Int) -> Void)?

    init(resolver: UpstreamResolver, settings: DownloadSettings, owner: UInt64) {
        self.resolver = resolver
        self.settings = settings
        self.owner = owner
    }

    func read(_ read: ArchiveRead, then: @escaping (ArchiveReadResult) -> Void) {
        let range = RangeRequest(bytes: read.range, ifMatch: read.validator?.ifMatch,
                                 ifUnmodifiedSince: read.validator?.ifUnmodifiedSince)
        let request = FetchRequest(url: read.url, ifNoneMatch: read.ifNoneMatch, range: range,
                                   maxBodyBytes: Int(clamping: max(range.count, 1)), timeouts: settings.timeouts, owner: owner)
        resolver.fetch(request, eachAnswer: { [weak self] bytes in self?.onAnswer?(bytes) }) { resolution in
            then(Self.result(of: resolution, read))
        }
    }

    static func result(of resolution: UpstreamResolver.Resolution, _ read: ArchiveRead) -> ArchiveReadResult {
        switch resolution {
        case .body(let response):
            return response.status == 206 ? read.partial(headers: response.headers.fields, body: response.body)
                : read.failure(status: response.status)
        case .notModified(let response):
            return .notModified(headers: response.headers.fields)
        case .noContent(let status):
            return read.failure(status: status)
        case .unauthorized(let status):
            return .failed(.unauthorized(url: read.url, status: status))
        case .refused:
            return .failed(.hostNotAllowed(url: read.url))
        case .rangeRefused(let error) where error == .rangeIgnored:
            return .failed(.rangeNotSupported(url: read.url))
        case .rangeRefused(let error):
            return .failed(.invalid(url: read.url, detail: "the server answered other bytes than the range asked for (\(error.code))"))
        case .failed(let status?, _, _) where status == 412 || status == 416:
            return read.failure(status: status)
        case .failed(let status, let message, let attempts):
            return .failed(.unavailable(url: read.url, status: status, detail: "reading the archive failed after \(attempts) attempts: \(message)"))
        case .stopped:
            return .stopped
        }
    }
}
