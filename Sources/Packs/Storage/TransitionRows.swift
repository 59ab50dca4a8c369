/// The rows a store changes to record a transition, inside the transaction that read the state:
/// what `PackLifecycle.Transition.record(_:in:now:)` needs from each store. Both stores implement
/// it over their own SQL; the order and the choice of rows are decided once, here.
public protocol TransitionRows {
    func clearFailures(packID: Int64) throws
    func restartInvalidation(_ packID: Int64, now: Int64) throws
    func storeExpected(_ packID: Int64, _ counts: ExpectedCounts, now: Int64) throws
    func removeRows(_ packID: Int64) throws
    func setPackState(_ packID: Int64, state: PackState, error: PackError?, now: Int64) throws
    /// Cuts the versions `PackLifecycle.Action.recordVersion` asks for; the versions cut.
    func recordVersion(_ packID: Int64, now: Int64) throws -> [PackVersion]
    /// Writes the webhook outbox rows of `types` about the pack as it is now (`WebhookTrigger`).
    func enqueueWebhooks(_ types: [WebhookEventType], packID: Int64) throws
}

extension PackLifecycle.Transition {
    /// Performs the storage actions, then stores the new state and error when they change; the
    /// transition with the versions it cut. The webhook messages the transition causes are
    /// written in the same transaction: after the new state (their `data` shows it), or before
    /// the rows go for a deletion.
    public func record(_ packID: Int64, in rows: some TransitionRows, now: Int64) throws -> Self {
        var recorded = self
        let webhooks = WebhookTrigger.types(of: self)
        if WebhookTrigger.precedesStorageActions(self) { try rows.enqueueWebhooks(webhooks, packID: packID) }
        for action in storageActions {
            switch action {
            case .clearFailures: try rows.clearFailures(packID: packID)
            case .restartRevalidation: try rows.restartInvalidation(packID, now: now)
            case .storeExpected(let counts): try rows.storeExpected(packID, counts, now: now)
            case .removeRows: try rows.removeRows(packID)
            case .recordVersion: recorded.createdVersions = try rows.recordVersion(packID, now: now)
            default: break
            }
        }
        if let to, changesState {
            try rows.setPackState(packID, state: to, error: error, now: now)
        }
        if !WebhookTrigger.precedesStorageActions(self) { try rows.enqueueWebhooks(webhooks, packID: packID) }
        return recorded
    }
}
