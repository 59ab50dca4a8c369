import Foundation

/// What both stores decide the same way around their SQL: how a subscription is stored, how
/// many deliveries each endpoint may take in a claim, what an attempt does to its endpoint.
/// Pure; each store only reads and writes rows around these.
public enum WebhookStoreRules {
    /// The `events` column (a JSON array).
    public static func eventsColumn(_ subscription: WebhookSubscription) -> String {
        PackRecord.encodeJSON(subscription.events) ?? "[]"
    }

    /// The `pack_ids` column (a JSON array, NULL for every pack).
    public static func packIDsColumn(_ subscription: WebhookSubscription) -> String? {
        subscription.packIDs.flatMap { PackRecord.encodeJSON($0) }
    }

    public static func subscription(events: String, packIDs: String?) -> WebhookSubscription {
        let decoder = JSONDecoder()
        return WebhookSubscription(events: (try? decoder.decode([String].self, from: Data(events.utf8))) ?? [],
                                   packIDs: packIDs.flatMap { try? decoder.decode([Int64].self, from: Data($0.utf8)) })
    }

    /// The endpoints a message of `type` about `packID` goes to: those of `endpoints` (enabled
    /// ones) whose subscription accepts it, or only `target` (a ping).
    public static func recipients(of type: WebhookEventType, packID: Int64?, target: Int64? = nil,
                                  among endpoints: [(id: Int64, subscription: WebhookSubscription)]) -> [Int64] {
        if let target { return endpoints.contains { $0.id == target } ? [target] : [] }
        return endpoints.filter { $0.subscription.accepts(type, packID: packID) }.map(\.id)
    }

    /// Free slots per endpoint for a claim: `perEndpoint` minus what is in flight (leased and
    /// not expired) to it on every node.
    public static func freeSlots(endpoints: [Int64], inFlight: [Int64: Int64], perEndpoint: Int) -> [(endpoint: Int64, free: Int)] {
        endpoints.compactMap { id in
            let free = perEndpoint - Int(inFlight[id] ?? 0)
            return free > 0 ? (id, free) : nil
        }
    }

    /// The candidates to lease: earliest due first across endpoints (each already cut to its
    /// free slots), at most `limit`.
    public static func chosen(_ candidates: [(delivery: Int64, due: Int64)], limit: Int) -> [Int64] {
        candidates.sorted { ($0.due, $0.delivery) < ($1.due, $1.delivery) }.prefix(max(0, limit)).map(\.delivery)
    }

    /// What an attempt does to its endpoint: the failing run it starts, continues or ends, and
    /// whether the endpoint is disabled now (and why).
    public static func endpointAfter(_ next: WebhookAttemptOutcome.Next, failingSince: Int64?, now: Int64,
                                     disableAfter: Int64) -> (failingSince: Int64?, disable: String?) {
        switch next {
        case .delivered:
            return (nil, nil)
        case .gone:
            return (failingSince ?? now, "gone")
        case .retry, .failed:
            let since = failingSince ?? now
            return (since, now - since >= disableAfter ? "failing" : nil)
        }
    }

    /// The delivery's columns after an attempt: state, next attempt, delivered at.
    public static func deliveryAfter(_ next: WebhookAttemptOutcome.Next, now: Int64)
        -> (state: WebhookDeliveryState, nextAttemptAt: Int64?, deliveredAt: Int64?, reason: String?) {
        switch next {
        case .delivered: (.delivered, nil, now, nil)
        case .retry(let at): (.pending, at, nil, nil)
        case .failed(let reason): (.failed, nil, nil, reason)
        case .gone: (.failed, nil, nil, "the endpoint answered 410 Gone: it is disabled")
        }
    }

    /// The `data` of a `webhook.disabled` message.
    public static func disabledData(endpointID: Int64, url: String, reason: String, failingSince: Int64?) -> String {
        struct Disabled: Encodable {
            let webhookID: Int64
            let url: String
            let reason: String
            let failingSince: PreciseTimestamp?
            enum CodingKeys: String, CodingKey {
                case url, reason
                case webhookID = "webhook_id"
                case failingSince = "failing_since"
            }
        }
        return PackRecord.encodeJSON(Disabled(webhookID: endpointID, url: url, reason: reason,
                                              failingSince: failingSince.map { PreciseTimestamp(milliseconds: $0) })) ?? "{}"
    }

    /// Writes the messages of a pack change through `enqueue` (a store's outbox insert: type,
    /// time, and the `data` it reads only when some endpoint takes the message), with the pack as
    /// `reader` sees it in the change's transaction as their `data`, read once.
    public static func enqueue(_ types: [WebhookEventType], packID: Int64, reading reader: some PackRepository,
                               _ enqueue: (WebhookEventType, Int64, () throws -> String?) throws -> Void) throws {
        guard !types.isEmpty else { return }
        let now = nowMilliseconds()
        var snapshot: String??
        for type in types {
            try enqueue(type, now) {
                if snapshot == nil {
                    snapshot = .some(try reader.pack(packID).map {
                        WebhookPackSnapshot(record: $0, progress: try reader.progress(packID) ?? StoredProgress()).json
                    })
                }
                return snapshot ?? nil
            }
        }
    }

    /// Attempts kept per delivery.
    public static let attemptsKept: Int64 = 20

    /// Unix milliseconds now: when outbox rows are written (the body's `timestamp`, the age of a
    /// delivery). The stores' own `now` parameters are whole seconds.
    public static func nowMilliseconds() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1000)
    }
}
