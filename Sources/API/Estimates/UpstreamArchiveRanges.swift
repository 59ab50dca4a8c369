import Jobs
import Packs

/// An estimate's archive reads, through the server's upstream client (one attempt each, the
/// fetcher's policy and limits), for the TileJSON of the PMTiles archives a region names.
final class UpstreamArchiveRanges: ArchiveRangeSource {
    /// A read is at most a leaf directory or the metadata; an estimate reads only the header,
    /// root directory and metadata.
    static let timeout: Duration = .seconds(15)
    private let client: any UpstreamClient

    init(client: any UpstreamClient) {
        self.client = client
    }

    func read(_ read: ArchiveRead, then: @escaping (ArchiveReadResult) -> Void) {
        let limits = UpstreamLimits(maxBodyBytes: Int(clamping: read.range.count), timeout: Self.timeout)
        client.getRange(read.url, range: read.range, ifMatch: read.validator?.ifMatch,
                        ifUnmodifiedSince: read.validator?.ifUnmodifiedSince, limits: limits) { result in
            switch result {
            case .success(let response) where response.status == 206:
                then(read.partial(headers: response.headers, body: response.body))
            case .success(let response):
                then(read.failure(status: response.status))
            case .failure(let failure) where failure.hostNotAllowed:
                then(.failed(.hostNotAllowed(url: read.url)))
            case .failure(let failure) where failure.code == "range_not_supported":
                then(.failed(.rangeNotSupported(url: read.url)))
            case .failure(let failure):
                then(.failed(.unavailable(url: read.url, status: nil, detail: "reading the archive failed: \(failure.code)")))
            }
        }
    }
}
