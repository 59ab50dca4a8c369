import Packs
import Postgres

/// Webhook reads on any connection (the writer's see its open transaction).
extension PostgresStoreConnection {
    static let webhookEndpointColumns = """
        SELECT id, url, description, events, pack_ids, secret, previous_secret, previous_secret_expires_at, enabled,
               disabled_reason, failing_since, created_at, updated_at FROM packd_webhook_endpoints
        """

    static func webhookEndpoint(_ row: PostgresRow) throws -> WebhookEndpointRecord {
        WebhookEndpointRecord(
            id: try row.int64(0), url: try row.string(1), description: try row.string(2),
            subscription: WebhookStoreRules.subscription(events: try row.string(3), packIDs: try row.stringOrNil(4)),
            secret: try row.string(5), previousSecret: try row.stringOrNil(6), previousSecretExpiresAt: try row.int64OrNil(7),
            enabled: try row.bool(8), disabledReason: try row.stringOrNil(9), failingSince: try row.int64OrNil(10),
            createdAt: try row.int64(11), updatedAt: try row.int64(12))
    }

    public func webhookEndpoints() throws -> [WebhookEndpointRecord] {
        try query(Self.webhookEndpointColumns + " ORDER BY id").map(Self.webhookEndpoint)
    }

    public func webhookEndpoint(_ id: Int64) throws -> WebhookEndpointRecord? {
        try query(Self.webhookEndpointColumns + " WHERE id = $1", [.int8(id)]).map(Self.webhookEndpoint).first
    }

    static let webhookDeliveryColumns = """
        SELECT d.id, d.endpoint_id, m.message_id, m.type, m.pack_id, d.state, d.attempts, d.next_attempt_at,
               d.last_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at
        FROM packd_webhook_deliveries d JOIN packd_webhook_messages m ON m.id = d.message_id
        """

    static func webhookDelivery(_ row: PostgresRow) throws -> WebhookDeliveryRecord {
        guard let type = WebhookEventType(rawValue: try row.string(3)),
              let state = WebhookDeliveryState(rawValue: try row.string(5)) else {
            throw StoreError(.corrupt, "webhook delivery \(try row.int64(0)) has an unknown type or state")
        }
        return WebhookDeliveryRecord(
            id: try row.int64(0), endpointID: try row.int64(1), messageID: try row.string(2), type: type,
            packID: try row.int64OrNil(4), state: state, attempts: try row.int64(6), nextAttemptAt: try row.int64OrNil(7),
            lastAttemptAt: try row.int64OrNil(8), lastStatus: try row.int64OrNil(9), lastError: try row.stringOrNil(10),
            deliveredAt: try row.int64OrNil(11), createdAt: try row.int64(12))
    }

    public func webhookDeliveries(endpointID: Int64, before: Int64?, limit: Int) throws -> [WebhookDeliveryRecord] {
        try query(Self.webhookDeliveryColumns + " WHERE d.endpoint_id = $1 AND d.id < $2 ORDER BY d.id DESC LIMIT $3",
                  [.int8(endpointID), .int8(before ?? .max), .int8(Int64(min(max(limit, 0), 500)))]).map(Self.webhookDelivery)
    }

    public func webhookDelivery(_ id: Int64, endpointID: Int64) throws -> WebhookDeliveryRecord? {
        try query(Self.webhookDeliveryColumns + " WHERE d.id = $1 AND d.endpoint_id = $2", [.int8(id), .int8(endpointID)])
            .map(Self.webhookDelivery).first
    }

    public func webhookAttempts(deliveryID: Int64) throws -> [WebhookAttemptRecord] {
        try query("""
            SELECT at, duration_ms, status, error, response FROM packd_webhook_attempts WHERE delivery_id = $1
            ORDER BY id DESC LIMIT $2
            """, [.int8(deliveryID), .int8(WebhookStoreRules.attemptsKept)]).map { row in
            WebhookAttemptRecord(at: try row.int64(0), durationMilliseconds: try row.int64(1), status: try row.int64OrNil(2),
                                 error: try row.stringOrNil(3), response: try row.stringOrNil(4))
        }
    }

    public func webhookQueueStatus(now: Int64) throws -> WebhookQueueStatus {
        try query("""
            SELECT count(*), min(d.created_at),
                   min(CASE WHEN d.lease_until IS NULL OR d.lease_until <= $1 THEN d.next_attempt_at END)
            FROM packd_webhook_deliveries d JOIN packd_webhook_endpoints e ON e.id = d.endpoint_id
            WHERE d.state = 'pending' AND e.enabled
            """, [.int8(now)]).map { row in
            WebhookQueueStatus(pending: try row.int64(0), oldestPendingCreatedAt: try row.int64OrNil(1), nextDueAt: try row.int64OrNil(2))
        }.first ?? WebhookQueueStatus()
    }
}
