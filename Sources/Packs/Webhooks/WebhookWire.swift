/// A webhook endpoint as the API shows it (openapi's `Webhook`). The secret appears only in
/// the answers that make one (creation and rotation: `secret`), never again.
public struct WebhookEndpoint: Sendable, Equatable, Codable {
    public var id: Int64
    public var url: String
    public var description: String
    public var events: [String]
    public var packIDs: [Int64]?
    public var enabled: Bool
    public var disabledReason: String?
    /// Until when the secret before the last rotation still signs beside the current one.
    public var previousSecretExpiresAt: PreciseTimestamp?
    public var createdAt: PreciseTimestamp
    public var updatedAt: PreciseTimestamp
    /// Only in the answer to a creation or a rotation.
    public var secret: String?

    public init(_ record: WebhookEndpointRecord, now: Int64, secret: String? = nil) {
        id = record.id
        url = record.url
        description = record.description
        events = record.subscription.events
        packIDs = record.subscription.packIDs
        enabled = record.enabled
        disabledReason = record.disabledReason
        previousSecretExpiresAt = record.previousSecret != nil ? record.previousSecretExpiresAt.flatMap {
            $0 > now ? PreciseTimestamp(milliseconds: $0) : nil
        } : nil
        createdAt = PreciseTimestamp(milliseconds: record.createdAt)
        updatedAt = PreciseTimestamp(milliseconds: record.updatedAt)
        self.secret = secret
    }

    private enum CodingKeys: String, CodingKey {
        case id, url, description, events, enabled, secret
        case packIDs = "pack_ids"
        case disabledReason = "disabled_reason"
        case previousSecretExpiresAt = "previous_secret_expires_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Every field, `null` included; `secret` only when there is one to show.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(url, forKey: .url)
        try container.encode(description, forKey: .description)
        try container.encode(events, forKey: .events)
        try container.encode(packIDs, forKey: .packIDs)
        try container.encode(enabled, forKey: .enabled)
        try container.encode(disabledReason, forKey: .disabledReason)
        try container.encode(previousSecretExpiresAt, forKey: .previousSecretExpiresAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encodeIfPresent(secret, forKey: .secret)
    }
}

/// `GET /v1/webhooks`.
public struct WebhookEndpointList: Sendable, Equatable, Codable {
    public var webhooks: [WebhookEndpoint]

    public init(webhooks: [WebhookEndpoint]) {
        self.webhooks = webhooks
    }
}

/// The body of `POST /v1/webhooks` (openapi's `WebhookCreate`).
public struct WebhookCreation: Sendable, Equatable, Codable {
    public var url: String
    public var events: [String]
    public var packIDs: [Int64]?
    public var description: String?

    public init(url: String, events: [String], packIDs: [Int64]? = nil, description: String? = nil) {
        self.url = url
        self.events = events
        self.packIDs = packIDs
        self.description = description
    }

    private enum CodingKeys: String, CodingKey {
        case url, events, description
        case packIDs = "pack_ids"
    }
}

/// One delivery as `GET /v1/webhooks/{id}/deliveries` lists it (openapi's `WebhookDelivery`).
public struct WebhookDelivery: Sendable, Equatable, Codable {
    public var id: Int64
    public var webhookID: Int64
    /// The message's `webhook-id` header.
    public var eventID: String
    public var type: WebhookEventType
    public var packID: Int64?
    public var state: WebhookDeliveryState
    public var attempts: Int64
    public var lastStatus: Int64?
    public var lastError: String?
    public var lastAttemptAt: PreciseTimestamp?
    public var nextAttemptAt: PreciseTimestamp?
    public var deliveredAt: PreciseTimestamp?
    public var createdAt: PreciseTimestamp
    /// Only in `GET /v1/webhooks/{id}/deliveries/{delivery_id}`: the latest attempts, newest first.
    public var attemptLog: [WebhookAttempt]?

    public init(_ record: WebhookDeliveryRecord, attempts log: [WebhookAttemptRecord]? = nil) {
        id = record.id
        webhookID = record.endpointID
        eventID = record.messageID
        type = record.type
        packID = record.packID
        state = record.state
        attempts = record.attempts
        lastStatus = record.lastStatus
        lastError = record.lastError
        lastAttemptAt = record.lastAttemptAt.map { PreciseTimestamp(milliseconds: $0) }
        nextAttemptAt = record.state == .pending ? record.nextAttemptAt.map { PreciseTimestamp(milliseconds: $0) } : nil
        deliveredAt = record.deliveredAt.map { PreciseTimestamp(milliseconds: $0) }
        createdAt = PreciseTimestamp(milliseconds: record.createdAt)
        attemptLog = log.map { $0.map(WebhookAttempt.init) }
    }

    private enum CodingKeys: String, CodingKey {
        case id, type, state, attempts
        case webhookID = "webhook_id"
        case eventID = "event_id"
        case packID = "pack_id"
        case lastStatus = "last_status"
        case lastError = "last_error"
        case lastAttemptAt = "last_attempt_at"
        case nextAttemptAt = "next_attempt_at"
        case deliveredAt = "delivered_at"
        case createdAt = "created_at"
        case attemptLog = "attempt_log"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(webhookID, forKey: .webhookID)
        try container.encode(eventID, forKey: .eventID)
        try container.encode(type, forKey: .type)
        try container.encode(packID, forKey: .packID)
        try container.encode(state, forKey: .state)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(lastStatus, forKey: .lastStatus)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(lastAttemptAt, forKey: .lastAttemptAt)
        try container.encode(nextAttemptAt, forKey: .nextAttemptAt)
        try container.encode(deliveredAt, forKey: .deliveredAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(attemptLog, forKey: .attemptLog)
    }
}

/// One attempt in a delivery's `attempt_log`.
public struct WebhookAttempt: Sendable, Equatable, Codable {
    public var at: PreciseTimestamp
    public var durationMS: Int64
    public var status: Int64?
    public var error: String?
    /// The first KiB of the answer's body.
    public var response: String?

    public init(_ record: WebhookAttemptRecord) {
        at = PreciseTimestamp(milliseconds: record.at)
        durationMS = record.durationMilliseconds
        status = record.status
        error = record.error
        response = record.response
    }

    private enum CodingKeys: String, CodingKey {
        case at, status, error, response
        case durationMS = "duration_ms"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(at, forKey: .at)
        try container.encode(durationMS, forKey: .durationMS)
        try container.encode(status, forKey: .status)
        try container.encode(error, forKey: .error)
        try container.encode(response, forKey: .response)
    }
}

/// `GET /v1/webhooks/{id}/deliveries`: a page, newest first, and the path of the next one.
public struct WebhookDeliveryList: Sendable, Equatable, Codable {
    public var deliveries: [WebhookDelivery]
    /// nil on the last page.
    public var next: String?

    public init(deliveries: [WebhookDelivery], next: String?) {
        self.deliveries = deliveries
        self.next = next
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(deliveries, forKey: .deliveries)
        try container.encode(next, forKey: .next)
    }

    private enum CodingKeys: String, CodingKey { case deliveries, next }
}
