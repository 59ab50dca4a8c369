/// A webhook endpoint as a store keeps it. Times are Unix milliseconds (retries are scheduled
/// to the second and `Retry-After` honoured exactly). The secrets are stored because every
/// attempt is signed with them; they leave the store only for signing, and through the API
/// only in the answer that created them.
public struct WebhookEndpointRecord: Sendable, Equatable {
    public var id: Int64
    public var url: String
    public var description: String
    public var subscription: WebhookSubscription
    /// `whsec_` + base64 of the key.
    public var secret: String
    /// The secret before the last rotation, which still signs beside `secret` until
    /// `previousSecretExpiresAt`.
    public var previousSecret: String?
    public var previousSecretExpiresAt: Int64?
    public var enabled: Bool
    /// Why the endpoint was disabled: `gone` (it answered 410), `failing` (5 days of failures),
    /// `manual` (PATCH); nil while enabled.
    public var disabledReason: String?
    /// When the first of an unbroken run of failed attempts happened; nil after a success.
    public var failingSince: Int64?
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(id: Int64 = 0, url: String, description: String = "", subscription: WebhookSubscription, secret: String,
                previousSecret: String? = nil, previousSecretExpiresAt: Int64? = nil, enabled: Bool = true,
                disabledReason: String? = nil, failingSince: Int64? = nil, createdAt: Int64, updatedAt: Int64) {
        self.id = id
        self.url = url
        self.description = description
        self.subscription = subscription
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousSecretExpiresAt = previousSecretExpiresAt
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.failingSince = failingSince
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The secrets that sign an attempt at `now`: the current one, and the previous one during
    /// its overlap (the specification allows several space-separated signatures).
    public func signingSecrets(at now: Int64) -> [String] {
        guard let previousSecret, let until = previousSecretExpiresAt, until > now else { return [secret] }
        return [secret, previousSecret]
    }
}

extension WebhookEndpointRecord {
    /// The endpoint after `change` at `now`: enabling it clears why it was disabled and its
    /// failing run; disabling it by hand says `manual`.
    public func applying(_ change: WebhookEndpointChange, now: Int64) -> WebhookEndpointRecord {
        var record = self
        if let url = change.url { record.url = url }
        if let description = change.description { record.description = description }
        if let events = change.events { record.subscription.events = events }
        if let packIDs = change.packIDs { record.subscription.packIDs = packIDs }
        if let enabled = change.enabled, enabled != record.enabled {
            record.enabled = enabled
            record.disabledReason = enabled ? nil : "manual"
            record.failingSince = nil
        }
        record.updatedAt = now
        return record
    }
}

/// What `PATCH /v1/webhooks/{id}` changes; nil fields stay. `packIDs` `.some(nil)` clears the filter.
public struct WebhookEndpointChange: Sendable, Equatable {
    public var url: String?
    public var description: String?
    public var events: [String]?
    public var packIDs: [Int64]??
    public var enabled: Bool?

    public init(url: String? = nil, description: String? = nil, events: [String]? = nil, packIDs: [Int64]?? = nil,
                enabled: Bool? = nil) {
        self.url = url
        self.description = description
        self.events = events
        self.packIDs = packIDs
        self.enabled = enabled
    }
}

/// Where a delivery is: waiting for its next attempt (or in one), delivered (a 2xx), or failed
/// for good (out of time, a 410, or its endpoint refused for good).
public enum WebhookDeliveryState: String, Sendable, Codable, CaseIterable {
    case pending, delivered, failed
}

/// One message to one endpoint (the outbox row), with its last attempt.
public struct WebhookDeliveryRecord: Sendable, Equatable {
    public var id: Int64
    public var endpointID: Int64
    /// The message's `webhook-id`.
    public var messageID: String
    public var type: WebhookEventType
    public var packID: Int64?
    public var state: WebhookDeliveryState
    public var attempts: Int64
    /// When the next attempt is due (pending only).
    public var nextAttemptAt: Int64?
    public var lastAttemptAt: Int64?
    public var lastStatus: Int64?
    /// The transport error of the last attempt (`timeout`, `blocked_address`…), or why it failed.
    public var lastError: String?
    public var deliveredAt: Int64?
    public var createdAt: Int64

    public init(id: Int64, endpointID: Int64, messageID: String, type: WebhookEventType, packID: Int64?,
                state: WebhookDeliveryState, attempts: Int64, nextAttemptAt: Int64?, lastAttemptAt: Int64?, lastStatus: Int64?,
                lastError: String?, deliveredAt: Int64?, createdAt: Int64) {
        self.id = id
        self.endpointID = endpointID
        self.messageID = messageID
        self.type = type
        self.packID = packID
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastAttemptAt = lastAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.deliveredAt = deliveredAt
        self.createdAt = createdAt
    }
}

/// One attempt of a delivery, as kept for the deliveries' detail (the latest 20 per delivery).
public struct WebhookAttemptRecord: Sendable, Equatable {
    public var at: Int64
    public var durationMilliseconds: Int64
    public var status: Int64?
    public var error: String?
    /// The first KiB of the answer's body (UTF-8, invalid bytes replaced).
    public var response: String?

    public init(at: Int64, durationMilliseconds: Int64, status: Int64?, error: String?, response: String?) {
        self.at = at
        self.durationMilliseconds = durationMilliseconds
        self.status = status
        self.error = error
        self.response = response
    }

    /// How much of an answer's body is kept.
    public static let responseLimit = 1024
}

/// A delivery claimed for an attempt: everything the attempt needs, secrets included (they
/// stay in memory for the attempt only).
public struct ClaimedWebhookDelivery: Sendable, Equatable {
    public var deliveryID: Int64
    public var endpointID: Int64
    public var url: String
    public var secrets: [String]
    public var messageID: String
    public var type: WebhookEventType
    public var packID: Int64?
    /// The message's stored `data` (a `WebhookPackSnapshot` when the type carries the pack).
    public var data: String
    /// When the message was written (the body's `timestamp`).
    public var messageCreatedAt: Int64
    /// When the delivery was written (its age counts from here).
    public var createdAt: Int64
    /// Attempts before this one.
    public var attempts: Int64
    /// A manual retry's extension of the delivery's deadline.
    public var retryUntil: Int64?

    public init(deliveryID: Int64, endpointID: Int64, url: String, secrets: [String], messageID: String, type: WebhookEventType,
                packID: Int64?, data: String, messageCreatedAt: Int64, createdAt: Int64, attempts: Int64, retryUntil: Int64?) {
        self.deliveryID = deliveryID
        self.endpointID = endpointID
        self.url = url
        self.secrets = secrets
        self.messageID = messageID
        self.type = type
        self.packID = packID
        self.data = data
        self.messageCreatedAt = messageCreatedAt
        self.createdAt = createdAt
        self.attempts = attempts
        self.retryUntil = retryUntil
    }
}

/// How an attempt ended and what follows for its delivery (decided by the dispatcher's
/// `RetrySchedule`), for the store to record.
public struct WebhookAttemptOutcome: Sendable, Equatable {
    public enum Next: Sendable, Equatable {
        case delivered
        /// Try again at this time.
        case retry(at: Int64)
        /// Give up: out of time, or the endpoint refuses for good.
        case failed(reason: String)
        /// The endpoint answered 410 Gone: the delivery fails and the endpoint is disabled.
        case gone
    }

    public var deliveryID: Int64
    public var attempt: WebhookAttemptRecord
    public var next: Next

    public init(deliveryID: Int64, attempt: WebhookAttemptRecord, next: Next) {
        self.deliveryID = deliveryID
        self.attempt = attempt
        self.next = next
    }
}

/// What recording an attempt did beyond the delivery itself.
public struct WebhookAttemptEffect: Sendable, Equatable {
    /// The endpoint disabled by the attempt (it answered 410, or has failed everything for
    /// 5 days), and why (`gone`, `failing`); nil when it stays as it was.
    public var disabledEndpoint: Int64?
    public var disabledReason: String?
    /// False when the delivery (or its endpoint) was gone, or not held by the recording node.
    public var recorded: Bool

    public init(disabledEndpoint: Int64? = nil, disabledReason: String? = nil, recorded: Bool) {
        self.disabledEndpoint = disabledEndpoint
        self.disabledReason = disabledReason
        self.recorded = recorded
    }
}

/// The outbox at a glance (the dispatcher's poll, `/metrics`).
public struct WebhookQueueStatus: Sendable, Equatable {
    /// Deliveries waiting (to enabled endpoints).
    public var pending: Int64
    /// When the oldest of them was written; nil when none waits.
    public var oldestPendingCreatedAt: Int64?
    /// The earliest next attempt of an unleased one; nil when none.
    public var nextDueAt: Int64?

    public init(pending: Int64 = 0, oldestPendingCreatedAt: Int64? = nil, nextDueAt: Int64? = nil) {
        self.pending = pending
        self.oldestPendingCreatedAt = oldestPendingCreatedAt
        self.nextDueAt = nextDueAt
    }
}
