import CoreMetrics
import Foundation
import Loop
import Packs
import Prometheus
import Server

/// Every instrument packd exports, defined in one place so `/metrics` shows the whole set from
/// the start (a counter that appears only after its first increment breaks `rate()` queries), and
/// the layers below only increment.
///
/// Thread-safe: the instruments are atomics in the registry, and the labelled families keep their
/// children in a locked table. Label values that come from outside the code (routes, states,
/// error kinds) are capped per family, so a caller passing raw input cannot grow the registry
/// without bound; past the cap they are counted under `other`.
public final class PackdMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// For libraries that report through swift-metrics; `bootstrapSystem()` installs it.
    public let factory: PrometheusMetricsFactory

    public static let latencyBuckets: [Duration] = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]
    public static let maxLabelValues = 64

    private let httpRequests: LabelledFamily<Prometheus.Counter>
    private let httpLatency: LabelledFamily<DurationHistogram>
    private let packs: LabelledFamily<Prometheus.Gauge>
    private let upstreamErrors: LabelledFamily<Prometheus.Counter>
    private let upstreamHostLimit: LabelledFamily<Prometheus.Gauge>
    private let upstreamHostLatency: LabelledFamily<DurationHistogram>
    private let upstreamHostThrottled: LabelledFamily<Prometheus.Counter>
    public let downloadedBytes: Prometheus.Counter
    public let downloadedResources: Prometheus.Counter
    public let upstreamRetries: Prometheus.Counter
    public let activeTransfers: Prometheus.Gauge
    public let sseSubscribers: Prometheus.Gauge
    public let writerBatchLatency: DurationHistogram
    private let process = ProcessMetrics()
    private let loopStalls: LoopStallMetrics?

    /// `loop`: the event loop whose turns `packd_loop_stall_seconds` measures (left out without one).
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(), loop: EventLoop? = nil) {
        self.registry = registry
        loopStalls = loop.map { LoopStallMetrics(loop: $0) }
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        self.factory = factory
        httpRequests = LabelledFamily(names: ["route", "method", "status"]) { labels in
            registry.makeCounter(descriptor: Self.name("http_requests", "total", "HTTP requests answered, by route pattern, method and status."), labels: labels)
        }
        httpLatency = LabelledFamily(names: ["route"]) { labels in
            registry.makeDurationHistogram(descriptor: Self.name("http_request_duration", "seconds", "Time from request head to complete answer, by route pattern."), labels: labels, buckets: Self.latencyBuckets)
        }
        packs = LabelledFamily(names: ["state"]) { labels in
            registry.makeGauge(descriptor: Self.name("packs", "", "Packs by state."), labels: labels)
        }
        upstreamErrors = LabelledFamily(names: ["kind"]) { labels in
            registry.makeCounter(descriptor: Self.name("upstream_errors", "total", "Failed upstream requests, by kind of failure."), labels: labels)
        }
        upstreamHostLimit = LabelledFamily(names: ["host"]) { labels in
            registry.makeGauge(descriptor: Self.name("upstream_host_transfer_limit", "", "Transfers one upstream host may have in flight now (its adaptive or fixed limit)."), labels: labels)
        }
        upstreamHostLatency = LabelledFamily(names: ["host"]) { labels in
            registry.makeDurationHistogram(descriptor: Self.name("upstream_host_latency", "seconds", "Time from request sent to last byte of upstream transfers, by host."), labels: labels, buckets: Self.latencyBuckets)
        }
        upstreamHostThrottled = LabelledFamily(names: ["host", "status"]) { labels in
            registry.makeCounter(descriptor: Self.name("upstream_host_throttled_responses", "total", "429 and 503 answers (slow down), by upstream host."), labels: labels)
        }
        downloadedBytes = registry.makeCounter(descriptor: Self.name("downloaded_bytes", "total", "Bytes received from upstreams."))
        downloadedResources = registry.makeCounter(descriptor: Self.name("downloaded_resources", "total", "Resources downloaded and stored."))
        upstreamRetries = registry.makeCounter(descriptor: Self.name("upstream_retries", "total", "Upstream requests retried."))
        activeTransfers = registry.makeGauge(descriptor: Self.name("active_transfers", "", "Upstream transfers in flight."))
        sseSubscribers = registry.makeGauge(descriptor: Self.name("sse_subscribers", "", "Open server-sent event streams."))
        writerBatchLatency = registry.makeDurationHistogram(descriptor: Self.name("writer_batch_duration", "seconds", "Time to commit one batch on the SQLite writer thread."), labels: [], buckets: Self.latencyBuckets)
        // Prometheus' `*_build_info` convention: the facts are labels, the value is always 1.
        var buildLabels = [("version", BuildInfo.version)]
        if let commit = BuildInfo.commit { buildLabels.append(("commit", commit)) }
        registry.makeGauge(descriptor: Self.name("build_info", "", "packd's version and the commit it was built from (when known); always 1."),
                           labels: buildLabels).set(Int64(1))
        // The families' usual members exist from the start, so dashboards see zeros, not gaps.
        for state in PackState.allCases { setPacks(state: state, count: 0) }
        for kind in ["timeout", "connection", "http", "invalid", "too_large"] { _ = upstreamErrors.child(kind) }
    }

    /// Installs `factory` as the process-wide swift-metrics backend. Once per process (the CLI):
    /// swift-metrics refuses a second bootstrap.
    public func bootstrapSystem() {
        MetricsSystem.bootstrap(factory)
    }

    /// One answered request. `route` is the route pattern (`/v1/packs/{id}`), never the raw path.
    public func recordRequest(route: String, method: HTTPMethod, status: Int, duration: Duration) {
        httpRequests.child(route, method.rawValue, String(status)).increment()
        httpLatency.child(route).record(duration)
    }

    /// Wraps the handler of `route` (its pattern) so every answer is counted with its status and
    /// the time from the handler's start to the answer (for a stream: to its head).
    public func instrument(_ route: String, _ handler: @escaping APIHandler) -> APIHandler {
        { [self] request, responder in
            let started = ContinuousClock.now
            let method = request.method
            handler(request, responder.observing { status in
                self.recordRequest(route: route, method: method, status: status.code, duration: ContinuousClock.now - started)
            })
        }
    }

    public func setPacks(state: PackState, count: Int) {
        packs.child(state.rawValue).set(Int64(count))
    }

    public func recordUpstreamError(kind: String) {
        upstreamErrors.child(kind).increment()
    }

    /// One finished transfer to `host` (`host[:port]`): its latency, its status if it was a
    /// 429/503, and the host's limit after it.
    public func recordUpstreamHost(_ host: String, latency: Duration, status: Int?, limit: Int) {
        upstreamHostLatency.child(host).record(latency)
        upstreamHostLimit.child(host).set(Int64(limit))
        if let status, status == 429 || status == 503 { upstreamHostThrottled.child(host, String(status)).increment() }
    }

    /// The exposition for `GET /metrics`: packd's instruments, the loop's stalls, then the
    /// process' own figures.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        if let loopStalls { buffer.append(contentsOf: loopStalls.exposition().utf8) }
        buffer.append(contentsOf: process.exposition().utf8)
        return buffer
    }

    /// The `GET /metrics` handler (Prometheus text format 0.0.4).
    public func handler() -> RequestHandler {
        { [self] _, responder in
            responder.respond(HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"], body: exposition()))
        }
    }

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "packd", metricName: metric, unitName: unit, helpText: help)
    }
}
