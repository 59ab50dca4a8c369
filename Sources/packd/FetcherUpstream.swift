import API
import Fetch
import Packs

/// The API's upstream access over the server's one `Fetcher`: estimates and read-through
/// fetches go through the same address policy, upstream rules, per-host limits and metrics as
/// downloads. Loop thread only.
final class FetcherUpstream: UpstreamClient {
    /// The owner id of these transfers (packs use their positive ids).
    static let owner = UInt64.max
    private let fetcher: Fetcher

    init(fetcher: Fetcher) {
        self.fetcher = fetcher
    }

    func get(_ url: String, limits: UpstreamLimits, completion: @escaping (Result<UpstreamResponse, UpstreamFailure>) -> Void) {
        submit(url, range: nil, limits: limits, completion: completion)
    }

    func getRange(_ url: String, range: ClosedRange<UInt64>, ifMatch: String?, ifUnmodifiedSince: Int64?, limits: UpstreamLimits,
                  completion: @escaping (Result<UpstreamResponse, UpstreamFailure>) -> Void) {
        submit(url, range: RangeRequest(bytes: range, ifMatch: ifMatch, ifUnmodifiedSince: ifUnmodifiedSince),
               limits: limits, completion: completion)
    }

    private func submit(_ url: String, range: RangeRequest?, limits: UpstreamLimits,
                        completion: @escaping (Result<UpstreamResponse, UpstreamFailure>) -> Void) {
        let total = Self.milliseconds(limits.timeout)
        let request = FetchRequest(
            url: url, range: range, maxBodyBytes: range.map { Int(clamping: $0.count) } ?? limits.maxBodyBytes,
            timeouts: .init(connectMilliseconds: min(10_000, total), totalMilliseconds: total), owner: Self.owner)
        fetcher.submit(request) { result in
            switch result {
            case .success(let response):
                completion(.success(UpstreamResponse(status: response.status, body: response.body,
                                                     cache: response.headers.cacheHeaders(now: WallClock.system.now),
                                                     headers: response.headers.fields)))
            case .failure(let error):
                completion(.failure(UpstreamFailure(code: error.code, hostNotAllowed: error == .blockedAddress)))
            }
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return max(1, Int(min(seconds, 86_400)) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }
}
