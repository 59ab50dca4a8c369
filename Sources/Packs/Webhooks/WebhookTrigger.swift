/// Which webhook messages a committed change of a pack causes. The stores call it inside the
/// transaction that records the change and write the outbox rows there, so a delivery exists
/// exactly when the change is durable: `kill -9` between the two is impossible. Pure.
public enum WebhookTrigger {
    /// The types a lifecycle transition causes: `complete` → `pack.completed`, `failed` →
    /// `pack.failed` (and `pack.tile_limit_exceeded` when that is why), deletion → `pack.removed`.
    public static func types(of transition: PackLifecycle.Transition) -> [WebhookEventType] {
        guard let to = transition.to else {
            return transition.from == nil ? [] : [.packRemoved]
        }
        guard transition.from != to else { return [] }
        switch to {
        case .complete:
            return [.packCompleted]
        case .failed:
            return transition.error?.code == .tileLimitExceeded ? [.packFailed, .packTileLimitExceeded] : [.packFailed]
        default:
            return []
        }
    }

    /// Whether a stored `check-update` result is news: an update that was not known before.
    public static func updateBecameAvailable(before: Bool?, after: Bool) -> Bool {
        after && before != true
    }

    /// Whether a transition's messages must be written before its storage actions run (a
    /// deletion: the pack's rows, which the snapshot reads, are about to go).
    public static func precedesStorageActions(_ transition: PackLifecycle.Transition) -> Bool {
        transition.to == nil
    }
}
