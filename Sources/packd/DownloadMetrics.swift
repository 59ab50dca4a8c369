import API
import Fetch
import Packs

/// Feeds `/metrics` from the layers below the API, which know nothing of it: the fetcher's
/// finished transfers, running count and per-host limits, latencies and 429s, and the writer's
/// batch times. Loop thread, except `committed` (the writer thread; the instruments are
/// thread-safe). Stored resources and retries reach the metrics through the API, which listens
/// to the scheduler.
struct DownloadMetrics {
    let metrics: PackdMetrics

    func connect(_ fetcher: Fetcher) {
        let metrics = metrics
        fetcher.onFinished = { result in
            switch result {
            case .success(let response):
                metrics.downloadedBytes.increment(by: Int64(response.body.count))
                if let kind = Self.errorKind(status: response.status) { metrics.recordUpstreamError(kind: kind) }
            case .failure(let error):
                if let kind = Self.errorKind(error) { metrics.recordUpstreamError(kind: kind) }
            }
        }
        fetcher.onRunningCountChange = { metrics.activeTransfers.set(Int64($0)) }
        fetcher.onHostSample = { sample in
            metrics.recordUpstreamHost(sample.host, latency: sample.latency, status: sample.status, limit: sample.limit)
        }
    }

    /// One committed writer batch.
    func committed(_ outcome: BatchOutcome) {
        metrics.writerBatchLatency.record(outcome.duration)
    }

    /// An HTTP answer that is a failure of the upstream: any error status except 404 (a tile the
    /// upstream has no content for, which MapLibre stores as such).
    static func errorKind(status: Int) -> String? {
        status >= 400 && status != 404 ? "http" : nil
    }

    /// `upstream_errors_total`'s kinds; cancellations and shutdown are packd's own doing, not errors.
    static func errorKind(_ error: FetchError) -> String? {
        switch error {
        case .timedOut: "timeout"
        case .dnsFailed, .connectFailed, .connectionReset, .truncatedBody, .tls, .transport: "connection"
        case .invalidURL, .unsupportedScheme, .invalidHeader, .blockedAddress, .tooManyRedirects: "invalid"
        case .tooLarge: "too_large"
        case .rangeIgnored, .rangeMismatch: "range"
        case .cancelled, .shutdown: nil
        }
    }
}
