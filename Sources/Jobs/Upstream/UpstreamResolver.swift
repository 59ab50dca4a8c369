import Fetch
import Loop
import Packs

/// The one place that decides what an upstream answer means for a job — downloads, document
/// phases, revalidations and update checks alike: stored body, not modified, no content, retry
/// after a backoff (and pause the host for everyone when it sent `Retry-After`), or give up.
/// Every request a job starts resolves exactly once — with `.stopped` once the job stopped, so
/// no path can leave a resource counted as under way for good. Loop thread only.
final class UpstreamResolver {
    /// What one resource came to after its retries.
    enum Resolution {
        /// 2xx other than 204.
        case body(FetchResponse)
        /// 304 to a conditional request: the stored copy still holds.
        case notModified(FetchResponse)
        /// The upstream has nothing here (`Policy.noContentStatuses`).
        case noContent(status: Int)
        /// 401/403: the upstream refuses us; retrying cannot help.
        case unauthorized(status: Int)
        /// The address policy refused the upstream's address (directly or after a redirect).
        case refused
        /// A range request answered with the whole file (`rangeIgnored`) or other bytes
        /// (`rangeMismatch`): retrying cannot help.
        case rangeRefused(FetchError)
        /// No usable answer after `attempts` tries: `status` when the upstream answered.
        case failed(status: Int?, message: String, attempts: Int)
        /// The job stopped (or the fetcher shut down) first.
        case stopped
    }

    /// How a kind of job reads answers.
    struct Policy {
        /// Answers meaning "nothing here": a download stores a tile as no content (404/204, as
        /// MapLibre does); a revalidation also reads 410 so.
        var noContentStatuses: Set<Int>
        /// Attempts per resource, the first included.
        var maxAttempts: Int
        /// Whether each failed request becomes a `resource_error` event.
        var reportsFailures: Bool

        static func download(_ settings: DownloadSettings) -> Policy {
            Policy(noContentStatuses: [204, 404], maxAttempts: settings.maxAttempts, reportsFailures: true)
        }

        static func revalidation(_ settings: DownloadSettings) -> Policy {
            Policy(noContentStatuses: [204, 404, 410], maxAttempts: settings.maxAttempts, reportsFailures: false)
        }

        /// `check-update` answers a waiting request: one attempt per probe.
        static let probe = Policy(noContentStatuses: [204, 404, 410], maxAttempts: 1, reportsFailures: false)
    }

    private struct PendingRetry {
        let request: FetchRequest
        let attempt: Int
        let eachAnswer: ((Int) -> Void)?
        let then: (Resolution) -> Void
    }

    private let fetcher: Fetcher
    private let settings: DownloadSettings
    private let policy: Policy
    private let packID: Int64?
    private let clock: WallClock
    private weak var listener: (any PackActivityListener)?
    private var retries: RetryQueue<PendingRetry>!
    private var stopped = false
    /// Hears every answer's body size as it arrives (a pack's bandwidth cap).
    var onAnswer: ((Int) -> Void)?

    init(loop: EventLoop, fetcher: Fetcher, settings: DownloadSettings, policy: Policy, packID: Int64?,
         clock: WallClock, listener: (any PackActivityListener)?) {
        self.fetcher = fetcher
        self.settings = settings
        self.policy = policy
        self.packID = packID
        self.clock = clock
        self.listener = listener
        retries = RetryQueue(loop: loop) { [weak self] retry in
            self?.attempt(retry.request, number: retry.attempt, eachAnswer: retry.eachAnswer, then: retry.then)
        }
    }

    /// Requests waiting for their next attempt.
    var retriesWaiting: Int { retries.count }

    /// Resolves `request`; `then` runs exactly once, on the loop thread, never inside this call.
    /// `eachAnswer` hears the body size of every attempt that got an answer (retries included).
    func fetch(_ request: FetchRequest, eachAnswer: ((Int) -> Void)? = nil, then: @escaping (Resolution) -> Void) {
        attempt(request, number: 1, eachAnswer: eachAnswer, then: then)
    }

    /// Drops the waiting retries; answers still arriving resolve as `.stopped`. Cancelling the
    /// transfers themselves is the caller's (they belong to its owner id).
    func stop() {
        stopped = true
        retries.close()
    }

    private func attempt(_ request: FetchRequest, number attempt: Int, eachAnswer: ((Int) -> Void)?,
                         then: @escaping (Resolution) -> Void) {
        fetcher.submit(request) { [weak self] result in
            guard let self, !stopped else { return then(.stopped) }
            if case .success(let response) = result {
                onAnswer?(response.body.count)
                eachAnswer?(response.body.count)
            }
            let url = request.url
            switch result {
            case .success(let response):
                switch response.status {
                case 304 where request.isConditional:
                    then(.notModified(response))
                case let status where policy.noContentStatuses.contains(status):
                    then(.noContent(status: status))
                case 200..<300:
                    then(.body(response))
                case 401, 403:
                    report(url, status: response.status, error: nil, attempt: attempt, willRetry: false)
                    then(.unauthorized(status: response.status))
                case 408, 429, 500..<600:
                    if response.status == 429 || response.status == 503,
                       let delay = response.headers.retryAfterDelay(now: clock.now) {
                        fetcher.pauseHost(of: url, until: .now + delay)
                    }
                    retry(request, attempt: attempt, status: response.status, message: "HTTP \(response.status)",
                          eachAnswer: eachAnswer, then: then)
                default:
                    report(url, status: response.status, error: nil, attempt: attempt, willRetry: false)
                    then(.failed(status: response.status, message: "HTTP \(response.status)", attempts: attempt))
                }
            case .failure(.shutdown):
                then(.stopped)
            case .failure(.cancelled):
                // Not by this job (`stop()` comes first): someone else cancelled the transfer.
                // Dropping it would leave the resource unresolved and the pack `active` forever.
                retry(request, attempt: attempt, status: nil, message: "cancelled", eachAnswer: eachAnswer, then: then)
            case .failure(.blockedAddress):
                then(.refused)
            case .failure(let error) where error == .rangeIgnored || error == .rangeMismatch:
                report(url, status: nil, error: error.description, attempt: attempt, willRetry: false)
                then(.rangeRefused(error))
            case .failure(let error):
                if error.isTransient {
                    retry(request, attempt: attempt, status: nil, message: error.description, eachAnswer: eachAnswer, then: then)
                } else {
                    report(url, status: nil, error: error.description, attempt: attempt, willRetry: false)
                    then(.failed(status: nil, message: error.description, attempts: attempt))
                }
            }
        }
    }

    private func retry(_ request: FetchRequest, attempt: Int, status: Int?, message: String,
                       eachAnswer: ((Int) -> Void)?, then: @escaping (Resolution) -> Void) {
        report(request.url, status: status, error: status == nil ? message : nil, attempt: attempt,
               willRetry: attempt < policy.maxAttempts)
        guard attempt < policy.maxAttempts else {
            return then(.failed(status: status, message: message, attempts: attempt))
        }
        listener?.retried()
        retries.add(PendingRetry(request: request, attempt: attempt + 1, eachAnswer: eachAnswer, then: then),
                    after: settings.backoff(afterAttempt: attempt))
    }

    private func report(_ url: String, status: Int?, error: String?, attempt: Int, willRetry: Bool) {
        guard policy.reportsFailures, let packID else { return }
        listener?.resourceFailed(ResourceErrorEvent(packID: packID, url: url, status: status, error: error, attempt: attempt,
                                                    willRetry: willRetry))
    }
}

extension FetchRequest {
    /// Sent with `If-None-Match`/`If-Modified-Since`: a 304 means "unchanged".
    var isConditional: Bool { ifNoneMatch != nil || ifModifiedSince != nil }
}
