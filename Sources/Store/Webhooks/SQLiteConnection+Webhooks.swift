import CSQLite
import Packs

/// Webhook reads, on the readers and inside the writer's transactions alike.
extension SQLiteConnection {
    static var webhookEndpointColumns: String {
        """
        SELECT id, url, description, events, pack_ids, secret, previous_secret, previous_secret_expires_at, enabled,
               disabled_reason, failing_since, created_at, updated_at FROM packd_webhook_endpoints
        """
    }

    static func webhookEndpoint(row: Statement) -> WebhookEndpointRecord {
        WebhookEndpointRecord(
            id: row.int64(at: 0), url: row.string(at: 1) ?? "", description: row.string(at: 2) ?? "",
            subscription: WebhookStoreRules.subscription(events: row.string(at: 3) ?? "[]", packIDs: row.string(at: 4)),
            secret: row.string(at: 5) ?? "", previousSecret: row.string(at: 6), previousSecretExpiresAt: row.optionalInt64(at: 7),
            enabled: row.int64(at: 8) != 0, disabledReason: row.string(at: 9), failingSince: row.optionalInt64(at: 10),
            createdAt: row.int64(at: 11), updatedAt: row.int64(at: 12))
    }

    public func webhookEndpoints() throws -> [WebhookEndpointRecord] {
        var result: [WebhookEndpointRecord] = []
        try database.cachedStatement(Self.webhookEndpointColumns + " ORDER BY id").forEachRow {
            result.append(Self.webhookEndpoint(row: $0))
        }
        return result
    }

    public func webhookEndpoint(_ id: Int64) throws -> WebhookEndpointRecord? {
        var result: WebhookEndpointRecord?
        try database.cachedStatement(Self.webhookEndpointColumns + " WHERE id = ?1").forEachRow([.integer(id)]) {
            result = Self.webhookEndpoint(row: $0)
        }
        return result
    }

    static var webhookDeliveryColumns: String {
        """
        SELECT d.id, d.endpoint_id, m.message_id, m.type, m.pack_id, d.state, d.attempts, d.next_attempt_at,
               d.last_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at
        FROM packd_webhook_deliveries d JOIN packd_webhook_messages m ON m.id = d.message_id
        """
    }

    static func webhookDelivery(row: Statement) throws -> WebhookDeliveryRecord {
        guard let type = WebhookEventType(rawValue: row.string(at: 3) ?? ""),
              let state = WebhookDeliveryState(rawValue: row.string(at: 5) ?? "") else {
            throw DatabaseError(code: SQLITE_CORRUPT, message: "webhook delivery \(row.int64(at: 0)) has an unknown type or state")
        }
        return WebhookDeliveryRecord(
            id: row.int64(at: 0), endpointID: row.int64(at: 1), messageID: row.string(at: 2) ?? "", type: type,
            packID: row.optionalInt64(at: 4), state: state, attempts: row.int64(at: 6), nextAttemptAt: row.optionalInt64(at: 7),
            lastAttemptAt: row.optionalInt64(at: 8), lastStatus: row.optionalInt64(at: 9), lastError: row.string(at: 10),
            deliveredAt: row.optionalInt64(at: 11), createdAt: row.int64(at: 12))
    }

    public func webhookDeliveries(endpointID: Int64, before: Int64?, limit: Int) throws -> [WebhookDeliveryRecord] {
        var result: [WebhookDeliveryRecord] = []
        try database.cachedStatement(Self.webhookDeliveryColumns + """
             WHERE d.endpoint_id = ?1 AND d.id < ?2 ORDER BY d.id DESC LIMIT ?3
            """).forEachRow([.integer(endpointID), .integer(before ?? .max), .integer(Int64(min(max(limit, 0), 500)))]) {
            result.append(try Self.webhookDelivery(row: $0))
        }
        return result
    }

    public func webhookDelivery(_ id: Int64, endpointID: Int64) throws -> WebhookDeliveryRecord? {
        var result: WebhookDeliveryRecord?
        try database.cachedStatement(Self.webhookDeliveryColumns + " WHERE d.id = ?1 AND d.endpoint_id = ?2")
            .forEachRow([.integer(id), .integer(endpointID)]) { result = try Self.webhookDelivery(row: $0) }
        return result
    }

    public func webhookAttempts(deliveryID: Int64) throws -> [WebhookAttemptRecord] {
        var result: [WebhookAttemptRecord] = []
        try database.cachedStatement("""
            SELECT at, duration_ms, status, error, response FROM packd_webhook_attempts WHERE delivery_id = ?1
            ORDER BY id DESC LIMIT ?2
            """).forEachRow([.integer(deliveryID), .integer(WebhookStoreRules.attemptsKept)]) {
            result.append(WebhookAttemptRecord(at: $0.int64(at: 0), durationMilliseconds: $0.int64(at: 1),
                                               status: $0.optionalInt64(at: 2), error: $0.string(at: 3), response: $0.string(at: 4)))
        }
        return result
    }

    public func webhookQueueStatus(now: Int64) throws -> WebhookQueueStatus {
        var status = WebhookQueueStatus()
        try database.cachedStatement("""
            SELECT count(*), min(d.created_at),
                   min(CASE WHEN d.lease_until IS NULL OR d.lease_until <= ?1 THEN d.next_attempt_at END)
            FROM packd_webhook_deliveries d JOIN packd_webhook_endpoints e ON e.id = d.endpoint_id
            WHERE d.state = 'pending' AND e.enabled = 1
            """).forEachRow([.integer(now)]) {
            status = WebhookQueueStatus(pending: $0.int64(at: 0), oldestPendingCreatedAt: $0.optionalInt64(at: 1),
                                        nextDueAt: $0.optionalInt64(at: 2))
        }
        return status
    }
}

extension StoreReader: WebhookRepository {}
