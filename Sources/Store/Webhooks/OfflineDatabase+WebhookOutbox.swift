import Packs

/// The outbox: a change that announces itself to webhooks writes its message and one delivery
/// per endpoint it goes to in the change's own transaction (`WebhookTrigger`), so a committed
/// change always has its deliveries and a rolled-back one never does.
extension OfflineDatabase {
    /// Writes the message and its deliveries (due now) to the enabled endpoints that take it,
    /// or to `target` alone; `data` is only read when some endpoint does. The deliveries' ids.
    @discardableResult
    func enqueueWebhookMessage(_ type: WebhookEventType, packID: Int64?, target: Int64? = nil, now: Int64,
                               data: () throws -> String?) throws -> [Int64] {
        var endpoints: [(id: Int64, subscription: WebhookSubscription)] = []
        try database.cachedStatement("SELECT id, events, pack_ids FROM packd_webhook_endpoints WHERE enabled = 1 ORDER BY id")
            .forEachRow { endpoints.append(($0.int64(at: 0), WebhookStoreRules.subscription(events: $0.string(at: 1) ?? "[]",
                                                                                             packIDs: $0.string(at: 2)))) }
        let recipients = WebhookStoreRules.recipients(of: type, packID: packID, target: target, among: endpoints)
        guard !recipients.isEmpty, let data = try data() else { return [] }
        try database.execute("""
            INSERT INTO packd_webhook_messages (message_id, type, pack_id, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
            """, [.text(WebhookMessageID.random()), .text(type.rawValue), DatabaseValue(packID), .text(data), .integer(now)])
        let message = database.lastInsertedRowID
        let insert = try database.cachedStatement("""
            INSERT INTO packd_webhook_deliveries (endpoint_id, message_id, state, next_attempt_at, created_at)
            VALUES (?1, ?2, 'pending', ?3, ?3)
            """)
        var deliveries: [Int64] = []
        for endpoint in recipients {
            try insert.execute([.integer(endpoint), .integer(message), .integer(now)])
            deliveries.append(database.lastInsertedRowID)
        }
        return deliveries
    }

    /// The messages of a pack change: the pack as it is now in this transaction is their `data`.
    func enqueueWebhookMessages(_ types: [WebhookEventType], packID: Int64) throws {
        try WebhookStoreRules.enqueue(types, packID: packID, reading: self) { type, now, data in
            try enqueueWebhookMessage(type, packID: packID, now: now, data: data)
        }
    }
}
