/// What a store keeps of webhooks: endpoints, the outbox of deliveries (one per message and
/// endpoint) and their attempts. Reads run where `PackRepository` reads run (never on the loop).
public protocol WebhookRepository: AnyObject {
    /// Every endpoint, in creation order.
    func webhookEndpoints() throws -> [WebhookEndpointRecord]
    func webhookEndpoint(_ id: Int64) throws -> WebhookEndpointRecord?
    /// The endpoint's deliveries with ids below `before` (nil: from the newest), newest first,
    /// at most `limit`.
    func webhookDeliveries(endpointID: Int64, before: Int64?, limit: Int) throws -> [WebhookDeliveryRecord]
    func webhookDelivery(_ id: Int64, endpointID: Int64) throws -> WebhookDeliveryRecord?
    /// A delivery's attempts, newest first (the latest 20 are kept).
    func webhookAttempts(deliveryID: Int64) throws -> [WebhookAttemptRecord]
    /// Pending deliveries to enabled endpoints: how many, the oldest, the next due at `now`.
    func webhookQueueStatus(now: Int64) throws -> WebhookQueueStatus
}

/// Changes to webhooks, on the store's one writer; each method is one transaction. The outbox
/// rows of pack changes are not written through here but by the change itself (`transition`,
/// `setUpdateAvailable`, `appendEvent`), in its own transaction (`WebhookTrigger`).
public protocol MutableWebhookRepository: WebhookRepository {
    /// Stores a new endpoint; its id.
    func createWebhookEndpoint(_ record: WebhookEndpointRecord) throws -> Int64
    /// Applies `change`; enabling an endpoint clears why it was disabled and its failing run.
    /// The endpoint after it, nil when there is none.
    func updateWebhookEndpoint(_ id: Int64, _ change: WebhookEndpointChange, now: Int64) throws -> WebhookEndpointRecord?
    /// `secret` signs from now on; the current one beside it until `previousUntil`.
    func rotateWebhookSecret(_ id: Int64, secret: String, previousUntil: Int64, now: Int64) throws -> WebhookEndpointRecord?
    /// Removes the endpoint, its deliveries and their attempts; false when there was none.
    func deleteWebhookEndpoint(_ id: Int64) throws -> Bool
    /// A `webhook.ping` message to this endpoint alone, due now; nil when there is no endpoint.
    func enqueueWebhookPing(endpointID: Int64, data: String, now: Int64) throws -> WebhookDeliveryRecord?
    /// Makes the delivery due now again (delivered or failed ones too: a resend), with at least
    /// `retryUntil` to succeed in; nil when there is none.
    func retryWebhookDelivery(_ id: Int64, endpointID: Int64, retryUntil: Int64, now: Int64) throws -> WebhookDeliveryRecord?
    /// Leases up to `limit` due deliveries of enabled endpoints to `owner` until `leaseUntil`,
    /// never more than `perEndpoint` in flight per endpoint across every node, earliest due first
    /// and each endpoint served in turn. In cluster mode, rows another node is claiming are
    /// skipped (`FOR UPDATE SKIP LOCKED`), and an expired lease (a dead node) is claimable.
    func claimWebhookDeliveries(owner: String, now: Int64, leaseUntil: Int64, limit: Int, perEndpoint: Int) throws
        -> [ClaimedWebhookDelivery]
    /// Records an attempt of a delivery `owner` holds and releases its lease. `disableAfter`:
    /// an endpoint failing everything for this long is disabled (`failing`); a 410 disables it
    /// (`gone`); each disabling writes a `webhook.disabled` message to the other endpoints.
    func recordWebhookAttempt(_ outcome: WebhookAttemptOutcome, owner: String, now: Int64, disableAfter: Int64) throws
        -> WebhookAttemptEffect
    /// Gives back every lease (SQLite mode starts with them: the one process that held them is gone).
    func releaseWebhookLeases() throws
    /// Deletes finished deliveries written before `before`, with their attempts and messages.
    func pruneWebhookDeliveries(before: Int64) throws -> Int64
}
