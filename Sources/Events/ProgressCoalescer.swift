/// Holds each pack's `progress` events to at most one per interval, keeping only the newest held
/// one, so a download reporting every tile costs subscribers ten events a second, yet the last
/// change is never lost: it is released when the interval ends (the broadcaster's flush timer) or
/// just before the pack's next non-progress event, which keeps a pack's events in order.
/// Pure bookkeeping with the time passed in, so it is tested without a clock.
struct ProgressCoalescer {
    private struct Entry {
        var lastEmitted: UInt64
        var pending: [UInt8]?
    }

    /// Milliseconds between two progress events of one pack.
    let interval: UInt64
    private var packs: [Int64: Entry] = [:]

    init(interval: UInt64) {
        self.interval = interval
    }

    /// The payload to emit now, or `nil` when it is held (replacing any older held one).
    mutating func offer(packID: Int64, payload: [UInt8], now: UInt64) -> [UInt8]? {
        if var entry = packs[packID], now < entry.lastEmitted &+ interval {
            entry.pending = payload
            packs[packID] = entry
            return nil
        }
        packs[packID] = Entry(lastEmitted: now, pending: nil)
        return payload
    }

    /// The pack's held payload, released early because another kind of event for the pack follows.
    mutating func takePending(packID: Int64, now: UInt64) -> [UInt8]? {
        guard let pending = packs[packID]?.pending else { return nil }
        packs[packID] = Entry(lastEmitted: now, pending: nil)
        return pending
    }

    /// Held payloads whose interval has passed, in pack order; packs idle for a whole interval are
    /// forgotten so the table holds only packs that are reporting.
    mutating func takeDue(now: UInt64) -> [(packID: Int64, payload: [UInt8])] {
        var due: [(packID: Int64, payload: [UInt8])] = []
        for (packID, entry) in packs where now >= entry.lastEmitted &+ interval {
            if let pending = entry.pending {
                due.append((packID, pending))
                packs[packID] = Entry(lastEmitted: now, pending: nil)
            } else {
                packs[packID] = nil
            }
        }
        return due.sorted { $0.packID < $1.packID }
    }

    /// Milliseconds until the next held payload is due, or `nil` when nothing is held.
    func delayUntilNextDue(now: UInt64) -> UInt64? {
        var delay: UInt64?
        for entry in packs.values where entry.pending != nil {
            let due = entry.lastEmitted &+ interval
            let wait = due > now ? due - now : 0
            delay = min(delay ?? wait, wait)
        }
        return delay
    }

    mutating func forget(packID: Int64) {
        packs[packID] = nil
    }

    var trackedPacks: Int { packs.count }
}
