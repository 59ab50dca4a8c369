import Packs

/// Webhook changes on the writer's connection; each method is one transaction.
extension OfflineDatabase: MutableWebhookRepository {
    public func createWebhookEndpoint(_ record: WebhookEndpointRecord) throws -> Int64 {
        try database.transaction {
            try database.execute("""
                INSERT INTO packd_webhook_endpoints (url, description, events, pack_ids, secret, previous_secret,
                  previous_secret_expires_at, enabled, disabled_reason, failing_since, created_at, updated_at)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                """, [.text(record.url), .text(record.description), .text(WebhookStoreRules.eventsColumn(record.subscription)),
                      DatabaseValue(WebhookStoreRules.packIDsColumn(record.subscription)), .text(record.secret),
                      DatabaseValue(record.previousSecret), DatabaseValue(record.previousSecretExpiresAt),
                      DatabaseValue(record.enabled), DatabaseValue(record.disabledReason), DatabaseValue(record.failingSince),
                      .integer(record.createdAt), .integer(record.updatedAt)])
            return database.lastInsertedRowID
        }
    }

    public func updateWebhookEndpoint(_ id: Int64, _ change: WebhookEndpointChange, now: Int64) throws -> WebhookEndpointRecord? {
        try database.transaction {
            guard let record = try webhookEndpoint(id)?.applying(change, now: now) else { return nil }
            try database.execute("""
                UPDATE packd_webhook_endpoints SET url = ?2, description = ?3, events = ?4, pack_ids = ?5, enabled = ?6,
                  disabled_reason = ?7, failing_since = ?8, updated_at = ?9 WHERE id = ?1
                """, [.integer(id), .text(record.url), .text(record.description),
                      .text(WebhookStoreRules.eventsColumn(record.subscription)),
                      DatabaseValue(WebhookStoreRules.packIDsColumn(record.subscription)), DatabaseValue(record.enabled),
                      DatabaseValue(record.disabledReason), DatabaseValue(record.failingSince), .integer(now)])
            return record
        }
    }

    public func rotateWebhookSecret(_ id: Int64, secret: String, previousUntil: Int64, now: Int64) throws -> WebhookEndpointRecord? {
        try database.transaction {
            try database.execute("""
                UPDATE packd_webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = ?3, secret = ?2,
                  updated_at = ?4 WHERE id = ?1
                """, [.integer(id), .text(secret), .integer(previousUntil), .integer(now)])
            return database.changes > 0 ? try webhookEndpoint(id) : nil
        }
    }

    public func deleteWebhookEndpoint(_ id: Int64) throws -> Bool {
        try database.transaction {
            try database.execute("DELETE FROM packd_webhook_endpoints WHERE id = ?1", [.integer(id)])
            let removed = database.changes > 0
            try deleteOrphanWebhookMessages()
            return removed
        }
    }

    public func enqueueWebhookPing(endpointID: Int64, data: String, now: Int64) throws -> WebhookDeliveryRecord? {
        try database.transaction {
            guard try webhookEndpoint(endpointID) != nil else { return nil }
            guard let deliveryID = try enqueueWebhookMessage(.webhookPing, packID: nil, target: endpointID, now: now,
                                                             data: { data }).first else { return nil }
            return try webhookDelivery(deliveryID, endpointID: endpointID)
        }
    }

    public func retryWebhookDelivery(_ id: Int64, endpointID: Int64, retryUntil: Int64, now: Int64) throws -> WebhookDeliveryRecord? {
        try database.transaction {
            try database.execute("""
                UPDATE packd_webhook_deliveries SET state = 'pending', next_attempt_at = ?3,
                  retry_until = max(IFNULL(retry_until, 0), ?4) WHERE id = ?1 AND endpoint_id = ?2
                """, [.integer(id), .integer(endpointID), .integer(now), .integer(retryUntil)])
            return database.changes > 0 ? try webhookDelivery(id, endpointID: endpointID) : nil
        }
    }

    public func claimWebhookDeliveries(owner: String, now: Int64, leaseUntil: Int64, limit: Int, perEndpoint: Int) throws
        -> [ClaimedWebhookDelivery] {
        try database.transaction {
            var inFlight: [Int64: Int64] = [:]
            try database.cachedStatement("""
                SELECT endpoint_id, count(*) FROM packd_webhook_deliveries WHERE lease_until IS NOT NULL AND lease_until > ?1
                GROUP BY endpoint_id
                """).forEachRow([.integer(now)]) { inFlight[$0.int64(at: 0)] = $0.int64(at: 1) }
            var enabled: [Int64] = []
            try database.cachedStatement("SELECT id FROM packd_webhook_endpoints WHERE enabled = 1 ORDER BY id")
                .forEachRow { enabled.append($0.int64(at: 0)) }
            var candidates: [(delivery: Int64, due: Int64)] = []
            let due = try database.cachedStatement("""
                SELECT id, next_attempt_at FROM packd_webhook_deliveries INDEXED BY packd_webhook_deliveries_due
                WHERE endpoint_id = ?1 AND state = 'pending' AND next_attempt_at <= ?2
                  AND (lease_until IS NULL OR lease_until <= ?2)
                ORDER BY next_attempt_at, id LIMIT ?3
                """)
            for (endpoint, free) in WebhookStoreRules.freeSlots(endpoints: enabled, inFlight: inFlight, perEndpoint: perEndpoint) {
                try due.forEachRow([.integer(endpoint), .integer(now), .integer(Int64(min(free, limit)))]) {
                    candidates.append(($0.int64(at: 0), $0.int64(at: 1)))
                }
            }
            let chosen = WebhookStoreRules.chosen(candidates, limit: limit)
            guard !chosen.isEmpty else { return [] }
            let lease = try database.cachedStatement("""
                UPDATE packd_webhook_deliveries SET lease_owner = ?2, lease_until = ?3 WHERE id = ?1
                """)
            var claimed: [ClaimedWebhookDelivery] = []
            let read = try database.cachedStatement("""
                SELECT d.id, d.endpoint_id, e.url, e.secret, e.previous_secret, e.previous_secret_expires_at, m.message_id, m.type,
                       m.pack_id, m.data, m.created_at, d.created_at, d.attempts, d.retry_until
                FROM packd_webhook_deliveries d JOIN packd_webhook_messages m ON m.id = d.message_id
                JOIN packd_webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = ?1
                """)
            for id in chosen {
                try lease.execute([.integer(id), .text(owner), .integer(leaseUntil)])
                try read.forEachRow([.integer(id)]) { row in
                    guard let type = WebhookEventType(rawValue: row.string(at: 7) ?? "") else { return }
                    var secrets = [row.string(at: 3) ?? ""]
                    if let previous = row.string(at: 4), let until = row.optionalInt64(at: 5), until > now { secrets.append(previous) }
                    claimed.append(ClaimedWebhookDelivery(
                        deliveryID: row.int64(at: 0), endpointID: row.int64(at: 1), url: row.string(at: 2) ?? "", secrets: secrets,
                        messageID: row.string(at: 6) ?? "", type: type, packID: row.optionalInt64(at: 8), data: row.string(at: 9) ?? "",
                        messageCreatedAt: row.int64(at: 10), createdAt: row.int64(at: 11), attempts: row.int64(at: 12),
                        retryUntil: row.optionalInt64(at: 13)))
                }
            }
            return claimed
        }
    }

    public func recordWebhookAttempt(_ outcome: WebhookAttemptOutcome, owner: String, now: Int64, disableAfter: Int64) throws
        -> WebhookAttemptEffect {
        try database.transaction {
            var endpoint: (id: Int64, url: String, failingSince: Int64?, enabled: Bool)?
            try database.cachedStatement("""
                SELECT e.id, e.url, e.failing_since, e.enabled FROM packd_webhook_deliveries d
                JOIN packd_webhook_endpoints e ON e.id = d.endpoint_id WHERE d.id = ?1 AND d.lease_owner = ?2
                """).forEachRow([.integer(outcome.deliveryID), .text(owner)]) {
                endpoint = ($0.int64(at: 0), $0.string(at: 1) ?? "", $0.optionalInt64(at: 2), $0.int64(at: 3) != 0)
            }
            guard let endpoint else { return WebhookAttemptEffect(recorded: false) }
            let attempt = outcome.attempt
            let after = WebhookStoreRules.deliveryAfter(outcome.next, now: now)
            try database.execute("""
                UPDATE packd_webhook_deliveries SET attempts = attempts + 1, state = ?2, next_attempt_at = ?3, delivered_at = ?4,
                  last_attempt_at = ?5, last_status = ?6, last_error = ?7, lease_owner = NULL, lease_until = NULL WHERE id = ?1
                """, [.integer(outcome.deliveryID), .text(after.state.rawValue), DatabaseValue(after.nextAttemptAt),
                      DatabaseValue(after.deliveredAt), .integer(attempt.at), DatabaseValue(attempt.status),
                      DatabaseValue(attempt.error ?? after.reason)])
            try database.execute("""
                INSERT INTO packd_webhook_attempts (delivery_id, at, duration_ms, status, error, response)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                """, [.integer(outcome.deliveryID), .integer(attempt.at), .integer(attempt.durationMilliseconds),
                      DatabaseValue(attempt.status), DatabaseValue(attempt.error), DatabaseValue(attempt.response)])
            try database.execute("""
                DELETE FROM packd_webhook_attempts WHERE delivery_id = ?1 AND id <= (
                  SELECT id FROM packd_webhook_attempts WHERE delivery_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)
                """, [.integer(outcome.deliveryID), .integer(WebhookStoreRules.attemptsKept)])
            let health = WebhookStoreRules.endpointAfter(outcome.next, failingSince: endpoint.failingSince, now: now,
                                                         disableAfter: disableAfter)
            guard endpoint.enabled, let reason = health.disable else {
                try database.execute("UPDATE packd_webhook_endpoints SET failing_since = ?2 WHERE id = ?1",
                                     [.integer(endpoint.id), DatabaseValue(health.failingSince)])
                return WebhookAttemptEffect(recorded: true)
            }
            try database.execute("""
                UPDATE packd_webhook_endpoints SET failing_since = ?2, enabled = 0, disabled_reason = ?3, updated_at = ?4 WHERE id = ?1
                """, [.integer(endpoint.id), DatabaseValue(health.failingSince), .text(reason), .integer(now)])
            try enqueueWebhookMessage(.webhookDisabled, packID: nil, now: now, data: {
                WebhookStoreRules.disabledData(endpointID: endpoint.id, url: endpoint.url, reason: reason,
                                               failingSince: health.failingSince)
            })
            return WebhookAttemptEffect(disabledEndpoint: endpoint.id, disabledReason: reason, recorded: true)
        }
    }

    public func releaseWebhookLeases() throws {
        try database.execute("UPDATE packd_webhook_deliveries SET lease_owner = NULL, lease_until = NULL WHERE lease_until IS NOT NULL")
    }

    public func pruneWebhookDeliveries(before: Int64) throws -> Int64 {
        try database.transaction {
            try database.execute("DELETE FROM packd_webhook_deliveries WHERE state != 'pending' AND created_at < ?1",
                                 [.integer(before)])
            let pruned = Int64(database.changes)
            try deleteOrphanWebhookMessages()
            return pruned
        }
    }

    private func deleteOrphanWebhookMessages() throws {
        try database.execute("""
            DELETE FROM packd_webhook_messages WHERE NOT EXISTS (
              SELECT 1 FROM packd_webhook_deliveries d WHERE d.message_id = packd_webhook_messages.id)
            """)
    }
}
