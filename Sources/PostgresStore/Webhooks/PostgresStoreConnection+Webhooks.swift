import Packs
import Postgres

/// Webhook changes on the writer's connection; each method is one transaction (a savepoint in
/// a batch). Claims lock the endpoints they serve (`FOR UPDATE SKIP LOCKED`), so each endpoint's
/// in-flight count is exact across nodes and no delivery is leased to two nodes at once.
extension PostgresStoreConnection {
    public func createWebhookEndpoint(_ record: WebhookEndpointRecord) throws -> Int64 {
        try scalar("""
            INSERT INTO packd_webhook_endpoints (url, description, events, pack_ids, secret, previous_secret,
              previous_secret_expires_at, enabled, disabled_reason, failing_since, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id
            """, [.text(record.url), .text(record.description), .text(WebhookStoreRules.eventsColumn(record.subscription)),
                  PostgresValue(WebhookStoreRules.packIDsColumn(record.subscription)), .text(record.secret),
                  PostgresValue(record.previousSecret), PostgresValue(record.previousSecretExpiresAt), .bool(record.enabled),
                  PostgresValue(record.disabledReason), PostgresValue(record.failingSince), .int8(record.createdAt),
                  .int8(record.updatedAt)]) ?? 0
    }

    public func updateWebhookEndpoint(_ id: Int64, _ change: WebhookEndpointChange, now: Int64) throws -> WebhookEndpointRecord? {
        try transaction {
            guard let record = try query(Self.webhookEndpointColumns + " WHERE id = $1 FOR UPDATE", [.int8(id)])
                .map(Self.webhookEndpoint).first?.applying(change, now: now) else { return nil }
            try query("""
                UPDATE packd_webhook_endpoints SET url = $2, description = $3, events = $4, pack_ids = $5, enabled = $6,
                  disabled_reason = $7, failing_since = $8, updated_at = $9 WHERE id = $1
                """, [.int8(id), .text(record.url), .text(record.description), .text(WebhookStoreRules.eventsColumn(record.subscription)),
                      PostgresValue(WebhookStoreRules.packIDsColumn(record.subscription)), .bool(record.enabled),
                      PostgresValue(record.disabledReason), PostgresValue(record.failingSince), .int8(now)])
            return record
        }
    }

    public func rotateWebhookSecret(_ id: Int64, secret: String, previousUntil: Int64, now: Int64) throws -> WebhookEndpointRecord? {
        try query("""
            UPDATE packd_webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = $3, secret = $2,
              updated_at = $4 WHERE id = $1
            RETURNING id, url, description, events, pack_ids, secret, previous_secret, previous_secret_expires_at, enabled,
              disabled_reason, failing_since, created_at, updated_at
            """, [.int8(id), .text(secret), .int8(previousUntil), .int8(now)]).map(Self.webhookEndpoint).first
    }

    public func deleteWebhookEndpoint(_ id: Int64) throws -> Bool {
        try transaction {
            let removed = try scalar("DELETE FROM packd_webhook_endpoints WHERE id = $1 RETURNING id", [.int8(id)]) != nil
            try deleteOrphanWebhookMessages()
            return removed
        }
    }

    public func enqueueWebhookPing(endpointID: Int64, data: String, now: Int64) throws -> WebhookDeliveryRecord? {
        try transaction {
            guard let delivery = try enqueueWebhookMessage(.webhookPing, packID: nil, target: endpointID, now: now,
                                                           data: { data }).first else { return nil }
            return try webhookDelivery(delivery, endpointID: endpointID)
        }
    }

    public func retryWebhookDelivery(_ id: Int64, endpointID: Int64, retryUntil: Int64, now: Int64) throws -> WebhookDeliveryRecord? {
        try transaction {
            guard try scalar("""
                UPDATE packd_webhook_deliveries SET state = 'pending', next_attempt_at = $3,
                  retry_until = greatest(coalesce(retry_until, 0), $4) WHERE id = $1 AND endpoint_id = $2 RETURNING id
                """, [.int8(id), .int8(endpointID), .int8(now), .int8(retryUntil)]) != nil else { return nil }
            return try webhookDelivery(id, endpointID: endpointID)
        }
    }

    public func claimWebhookDeliveries(owner: String, now: Int64, leaseUntil: Int64, limit: Int, perEndpoint: Int) throws
        -> [ClaimedWebhookDelivery] {
        try transaction {
            // The endpoints no other node is claiming for right now, locked until this commits.
            let enabled = try query("SELECT id FROM packd_webhook_endpoints WHERE enabled ORDER BY id FOR UPDATE SKIP LOCKED")
                .map { try $0.int64(0) }
            guard !enabled.isEmpty else { return [] }
            var inFlight: [Int64: Int64] = [:]
            for row in try query("""
                SELECT endpoint_id, count(*) FROM packd_webhook_deliveries
                WHERE lease_until IS NOT NULL AND lease_until > $1 AND endpoint_id = ANY($2) GROUP BY endpoint_id
                """, [.int8(now), .int8Array(enabled)]) {
                inFlight[try row.int64(0)] = try row.int64(1)
            }
            var candidates: [(delivery: Int64, due: Int64)] = []
            for (endpoint, free) in WebhookStoreRules.freeSlots(endpoints: enabled, inFlight: inFlight, perEndpoint: perEndpoint) {
                for row in try query("""
                    SELECT id, next_attempt_at FROM packd_webhook_deliveries
                    WHERE endpoint_id = $1 AND state = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2)
                    ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED
                    """, [.int8(endpoint), .int8(now), .int8(Int64(min(free, limit)))]) {
                    candidates.append((try row.int64(0), try row.int64(1)))
                }
            }
            let chosen = WebhookStoreRules.chosen(candidates, limit: limit)
            guard !chosen.isEmpty else { return [] }
            return try query("""
                WITH leased AS (
                  UPDATE packd_webhook_deliveries SET lease_owner = $2, lease_until = $3 WHERE id = ANY($1)
                  RETURNING id, endpoint_id, message_id, created_at, attempts, retry_until
                )
                SELECT l.id, l.endpoint_id, e.url, e.secret, e.previous_secret, e.previous_secret_expires_at, m.message_id, m.type,
                       m.pack_id, m.data, m.created_at, l.created_at, l.attempts, l.retry_until
                FROM leased l JOIN packd_webhook_messages m ON m.id = l.message_id
                JOIN packd_webhook_endpoints e ON e.id = l.endpoint_id ORDER BY l.id
                """, [.int8Array(chosen), .text(owner), .int8(leaseUntil)]).compactMap { row in
                guard let type = WebhookEventType(rawValue: try row.string(7)) else { return nil }
                var secrets = [try row.string(3)]
                if let previous = try row.stringOrNil(4), let until = try row.int64OrNil(5), until > now { secrets.append(previous) }
                return ClaimedWebhookDelivery(
                    deliveryID: try row.int64(0), endpointID: try row.int64(1), url: try row.string(2), secrets: secrets,
                    messageID: try row.string(6), type: type, packID: try row.int64OrNil(8), data: try row.string(9),
                    messageCreatedAt: try row.int64(10), createdAt: try row.int64(11), attempts: try row.int64(12),
                    retryUntil: try row.int64OrNil(13))
            }
        }
    }

    public func recordWebhookAttempt(_ outcome: WebhookAttemptOutcome, owner: String, now: Int64, disableAfter: Int64) throws
        -> WebhookAttemptEffect {
        try transaction {
            guard let row = try query("""
                SELECT e.id, e.url, e.failing_since, e.enabled FROM packd_webhook_deliveries d
                JOIN packd_webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = $1 AND d.lease_owner = $2
                FOR UPDATE OF d, e
                """, [.int8(outcome.deliveryID), .text(owner)]).map({ $0 }).first else {
                return WebhookAttemptEffect(recorded: false)
            }
            let (endpoint, url, failingSince, enabled) = (try row.int64(0), try row.string(1), try row.int64OrNil(2), try row.bool(3))
            let attempt = outcome.attempt
            let after = WebhookStoreRules.deliveryAfter(outcome.next, now: now)
            try query("""
                UPDATE packd_webhook_deliveries SET attempts = attempts + 1, state = $2, next_attempt_at = $3, delivered_at = $4,
                  last_attempt_at = $5, last_status = $6, last_error = $7, lease_owner = NULL, lease_until = NULL WHERE id = $1
                """, [.int8(outcome.deliveryID), .text(after.state.rawValue), PostgresValue(after.nextAttemptAt),
                      PostgresValue(after.deliveredAt), .int8(attempt.at), PostgresValue(attempt.status),
                      PostgresValue(attempt.error ?? after.reason)])
            try query("""
                INSERT INTO packd_webhook_attempts (delivery_id, at, duration_ms, status, error, response) VALUES ($1, $2, $3, $4, $5, $6)
                """, [.int8(outcome.deliveryID), .int8(attempt.at), .int8(attempt.durationMilliseconds), PostgresValue(attempt.status),
                      PostgresValue(attempt.error), PostgresValue(attempt.response)])
            try query("""
                DELETE FROM packd_webhook_attempts WHERE delivery_id = $1 AND id <= (
                  SELECT id FROM packd_webhook_attempts WHERE delivery_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)
                """, [.int8(outcome.deliveryID), .int8(WebhookStoreRules.attemptsKept)])
            let health = WebhookStoreRules.endpointAfter(outcome.next, failingSince: failingSince, now: now, disableAfter: disableAfter)
            guard enabled, let reason = health.disable else {
                try query("UPDATE packd_webhook_endpoints SET failing_since = $2 WHERE id = $1",
                          [.int8(endpoint), PostgresValue(health.failingSince)])
                return WebhookAttemptEffect(recorded: true)
            }
            try query("""
                UPDATE packd_webhook_endpoints SET failing_since = $2, enabled = false, disabled_reason = $3, updated_at = $4 WHERE id = $1
                """, [.int8(endpoint), PostgresValue(health.failingSince), .text(reason), .int8(now)])
            try enqueueWebhookMessage(.webhookDisabled, packID: nil, now: now, data: {
                WebhookStoreRules.disabledData(endpointID: endpoint, url: url, reason: reason, failingSince: health.failingSince)
            })
            return WebhookAttemptEffect(disabledEndpoint: endpoint, disabledReason: reason, recorded: true)
        }
    }

    /// Cluster mode never gives back other nodes' leases: they expire.
    public func releaseWebhookLeases() throws {}

    public func pruneWebhookDeliveries(before: Int64) throws -> Int64 {
        try transaction {
            let pruned = try query("DELETE FROM packd_webhook_deliveries WHERE state <> 'pending' AND created_at < $1 RETURNING id",
                                   [.int8(before)]).count
            try deleteOrphanWebhookMessages()
            return Int64(pruned)
        }
    }

    private func deleteOrphanWebhookMessages() throws {
        try query("""
            DELETE FROM packd_webhook_messages m WHERE NOT EXISTS (SELECT 1 FROM packd_webhook_deliveries d WHERE d.message_id = m.id)
            """)
    }

    // MARK: The outbox

    /// Writes the message and its deliveries (due now) to the enabled endpoints that take it, or
    /// to `target` alone; `data` is only read when some endpoint does. The deliveries' ids.
    @discardableResult
    func enqueueWebhookMessage(_ type: WebhookEventType, packID: Int64?, target: Int64? = nil, now: Int64,
                               data: () throws -> String?) throws -> [Int64] {
        let endpoints = try query("SELECT id, events, pack_ids FROM packd_webhook_endpoints WHERE enabled ORDER BY id").map { row in
            (id: try row.int64(0), subscription: WebhookStoreRules.subscription(events: try row.string(1), packIDs: try row.stringOrNil(2)))
        }
        let recipients = WebhookStoreRules.recipients(of: type, packID: packID, target: target, among: endpoints)
        guard !recipients.isEmpty, let data = try data() else { return [] }
        return try query("""
            WITH message AS (
              INSERT INTO packd_webhook_messages (message_id, type, pack_id, data, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id
            )
            INSERT INTO packd_webhook_deliveries (endpoint_id, message_id, state, next_attempt_at, created_at)
            SELECT endpoint, message.id, 'pending', $5, $5 FROM message, unnest($6::bigint[]) AS endpoint
            RETURNING id
            """, [.text(WebhookMessageID.random()), .text(type.rawValue), PostgresValue(packID), .text(data), .int8(now),
                  .int8Array(recipients)]).map { try $0.int64(0) }
    }

    /// The messages of a pack change, with the pack as it is now in this transaction as `data`.
    func enqueueWebhookMessages(_ types: [WebhookEventType], packID: Int64) throws {
        try WebhookStoreRules.enqueue(types, packID: packID, reading: self) { type, now, data in
            try enqueueWebhookMessage(type, packID: packID, now: now, data: data)
        }
    }

    /// The outbox rows of appended events webhooks carry by their type (`version_created`).
    func enqueueWebhooks(forAppended events: [StoredEvent]) throws {
        for event in events {
            guard let type = WebhookEventType.mapped(fromStoredEvent: event.type) else { continue }
            try enqueueWebhookMessage(type, packID: event.packID, now: WebhookStoreRules.nowMilliseconds()) { event.json }
        }
    }
}
