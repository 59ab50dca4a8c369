import Packs

/// The HTTP request of one attempt (pure): the body `{"data", "timestamp", "type"}` (keys
/// sorted, as packd writes every document), and the Standard Webhooks headers — the same
/// `webhook-id` on every attempt, this attempt's `webhook-timestamp`, and a signature per secret.
public struct WebhookRequest: Sendable, Equatable {
    public var body: [UInt8]
    public var headers: [(name: String, value: String)]

    public static func == (lhs: WebhookRequest, rhs: WebhookRequest) -> Bool {
        lhs.body == rhs.body && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// `data` is the message's `data` as JSON (the pack document already rendered for the types
    /// that carry one); `now` is the attempt's time, Unix ms.
    public init(_ delivery: ClaimedWebhookDelivery, data: [UInt8], now: Int64) {
        body = Array(#"{"data":"#.utf8) + data + Array(#","timestamp":""#.utf8)
            + Array(PreciseTimestamp(milliseconds: delivery.messageCreatedAt).rfc3339.utf8)
            + Array(#"","type":""#.utf8) + Array(delivery.type.rawValue.utf8) + Array(#""}"#.utf8)
        let timestamp = now / 1000
        let secrets = delivery.secrets.compactMap(WebhookSecret.init)
        headers = [
            ("Content-Type", "application/json"),
            ("webhook-id", delivery.messageID),
            ("webhook-timestamp", String(timestamp)),
            ("webhook-signature", WebhookSignature.header(messageID: delivery.messageID, timestamp: timestamp, body: body,
                                                          secrets: secrets)),
        ]
    }
}
