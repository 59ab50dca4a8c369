import Packs
import Prometheus
import Webhooks

/// What `/metrics` shows of webhooks: deliveries by how they ended, attempts by answer, what is
/// in flight, and the outbox's pending deliveries and the age of the oldest (the dispatcher's
/// poll sets them). Every member exists from the start (zeros, not gaps).
public final class WebhookMetrics: Sendable {
    private let deliveries: LabelledFamily<Prometheus.Counter>
    private let attempts: LabelledFamily<Prometheus.Counter>
    private let pending: Prometheus.Gauge
    private let oldestPendingAge: Prometheus.Gauge
    private let inFlight: Prometheus.Gauge

    static let outcomes = [WebhookDeliveryState.delivered, .failed].map(\.rawValue)
    static let answers = ["2xx", "3xx", "4xx", "5xx", "error"]

    public init(registry: PrometheusCollectorRegistry) {
        deliveries = LabelledFamily(names: ["outcome"]) { labels in
            registry.makeCounter(descriptor: Self.name("webhook_deliveries", "total",
                                                       "Webhook deliveries that ended, by outcome (delivered; failed: out of time, or 410)."),
                                 labels: labels)
        }
        attempts = LabelledFamily(names: ["answer"]) { labels in
            registry.makeCounter(descriptor: Self.name("webhook_attempts", "total",
                                                       "Webhook delivery attempts, by the receiver's answer (status class, or error)."),
                                 labels: labels)
        }
        pending = registry.makeGauge(descriptor: Self.name("webhook_pending_deliveries", "",
                                                           "Webhook deliveries waiting to enabled endpoints (the outbox)."))
        oldestPendingAge = registry.makeGauge(descriptor: Self.name("webhook_oldest_pending_age", "seconds",
                                                                    "Age of the oldest webhook delivery still waiting; 0 when none waits."))
        inFlight = registry.makeGauge(descriptor: Self.name("webhook_attempts_in_flight", "",
                                                            "Webhook attempts this node has on the wire."))
        for outcome in Self.outcomes { _ = deliveries.child(outcome) }
        for answer in Self.answers { _ = attempts.child(answer) }
    }

    /// One recorded attempt: its answer, and its delivery's outcome when it ended.
    public func record(_ attempt: WebhookDispatcher.Attempt, inFlight count: Int) {
        let answer = attempt.status.map { status in (200...599).contains(status) ? "\(status / 100)xx" : "error" } ?? "error"
        attempts.child(answer).increment()
        switch attempt.next {
        case .delivered: deliveries.child(WebhookDeliveryState.delivered.rawValue).increment()
        case .failed, .gone: deliveries.child(WebhookDeliveryState.failed.rawValue).increment()
        case .retry: break
        }
        inFlight.set(Int64(count))
    }

    /// The outbox as the dispatcher's last poll saw it (`now` in Unix ms).
    public func record(_ status: WebhookQueueStatus, now: Int64, inFlight count: Int) {
        pending.set(status.pending)
        oldestPendingAge.set(Double(max(0, now - (status.oldestPendingCreatedAt ?? now))) / 1000)
        inFlight.set(Int64(count))
    }

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "packd", metricName: metric, unitName: unit, helpText: help)
    }
}
