import CCurl
import Loop

/// Delivery pacing: completions run a share per loop turn, never inside curl's callbacks or a
/// caller's stack.
extension Fetcher {
    /// How many completions run in one loop turn. Each runs its owner's bookkeeping (a
    /// download's store write, its retries, its next requests): with a host's limit at 128, a
    /// turn that ran every completion curl had just reported held the loop — and every API
    /// request waiting on it — for milliseconds (GET /v1/packs/{id} p99 under a download went
    /// from 5 to 20 ms). The rest run on the following turns, between which the loop polls its
    /// sockets; they keep their transfer slots meanwhile, so the queue stays bounded.
    static let completionsPerTurn = 16

    /// Runs the next `completionsPerTurn` completions on the next loop turn, not inside curl's
    /// callbacks or a caller's stack.
    func scheduleDelivery() {
        guard !finished.isEmpty, !delivery.isScheduled else { return }
        delivery.schedule { [unowned self] in
            deliverFinished(atMost: Self.completionsPerTurn)
            scheduleDelivery()
            // Their slots are free now.
            if !queuedHosts.isEmpty { scheduleDispatch(after: .zero) }
        }
    }

    /// Runs queued completions (`limit` of them at most). Not re-entrant: a completion that
    /// cancels another transfer just adds to the queue this loop is draining.
    func deliverFinished(atMost limit: Int = .max) {
        guard !delivering else { return }
        delivering = true
        defer { delivering = false }
        var delivered = 0
        while delivered < limit, !finished.isEmpty {
            let (transfer, result) = finished.removeFirst()
            onFinished?(result)
            transfer.completion(result)
            delivered += 1
        }
    }
}
