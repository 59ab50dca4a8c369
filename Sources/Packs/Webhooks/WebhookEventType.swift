/// What a webhook endpoint can be told (api.md, "Webhooks"): the `type` of a delivery's body.
/// Endpoints subscribe to some of them, or to all with `*`.
public enum WebhookEventType: String, Sendable, CaseIterable, Codable, Comparable {
    case packCompleted = "pack.completed"
    case packFailed = "pack.failed"
    case packVersionCreated = "pack.version_created"
    case packRemoved = "pack.removed"
    case packTileLimitExceeded = "pack.tile_limit_exceeded"
    case packUpdateAvailable = "pack.update_available"
    /// `POST /v1/webhooks/{id}/ping`: sent to that endpoint only, whatever it subscribed to.
    case webhookPing = "webhook.ping"
    /// Another endpoint was disabled (it answered 410, or failed everything for 5 days).
    case webhookDisabled = "webhook.disabled"

    /// The subscription that takes every type but pings (which go to the pinged endpoint only).
    public static let wildcard = "*"

    /// Whether `data` is the pack document (rendered from a `WebhookPackSnapshot` taken in the
    /// transaction of the change); otherwise `data` is stored ready (the version, a ping).
    public var carriesPackDocument: Bool {
        switch self {
        case .packCompleted, .packFailed, .packRemoved, .packTileLimitExceeded, .packUpdateAvailable: true
        case .packVersionCreated, .webhookPing, .webhookDisabled: false
        }
    }

    /// The stored pack event (`packd_events.type`) a type is mapped from, when it is mapped by
    /// event rather than by the transition that causes it: the fleet-delivery work appends
    /// `version_created` events, and the outbox row is written in that append's transaction.
    public static func mapped(fromStoredEvent type: String) -> WebhookEventType? {
        type == "version_created" ? .packVersionCreated : nil
    }

    public static func < (lhs: WebhookEventType, rhs: WebhookEventType) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What an endpoint receives: some event types (or `*`: every type but pings), optionally only
/// for some packs. A pure value, so the stores' outbox and the API's validation agree.
public struct WebhookSubscription: Sendable, Equatable, Codable {
    /// Event type names, or `["*"]`.
    public var events: [String]
    /// Only these packs' events (nil: every pack). Events about no pack pass.
    public var packIDs: [Int64]?

    public init(events: [String], packIDs: [Int64]? = nil) {
        self.events = events
        self.packIDs = packIDs
    }

    /// Whether a message of `type` about `packID` goes to the endpoint.
    public func accepts(_ type: WebhookEventType, packID: Int64?) -> Bool {
        guard type != .webhookPing else { return false }
        guard events.contains(WebhookEventType.wildcard) || events.contains(type.rawValue) else { return false }
        guard let packIDs, let packID else { return true }
        return packIDs.contains(packID)
    }
}
