import CCurl
import Loop

/// Starting transfers: when a dispatch runs, which waiting transfers it starts (hosts in
/// rotation, under their limits), curl's per-host connection cap, and the easy handles.
extension Fetcher {
    /// Runs `dispatch` on a later loop turn: curl handles are only ever added from a uv timer or
    /// idle callback, never from inside curl or a caller's stack.
    func scheduleDispatch(after delay: Duration) {
        guard !closed || !finished.isEmpty else { return }
        let due = ContinuousClock.now + delay
        if let dispatchDue, dispatchDue <= due { return }
        dispatchDue = due
        if delay <= .zero {
            dispatchTimer.stop()
            dispatchSoon.schedule { [unowned self] in self.dispatch() }
        } else {
            dispatchSoon.cancel()
            dispatchTimer.start(after: delay) { [unowned self] in self.dispatch() }
        }
    }

    func dispatch() {
        dispatchDue = nil
        dispatchTimer.stop()
        dispatchSoon.cancel()
        scheduleDelivery()
        guard !closed else { return }
        let now = ContinuousClock.now
        var wake: Duration?
        var admitted: [Transfer] = waitingPosts.compactMap { waiting.removeValue(forKey: $0) }
        waitingPosts.removeAll()
        // Start each pass at a different host so a host with a deep queue cannot keep every slot
        // the overall limit frees.
        var keys = Array(queuedHosts)
        if !keys.isEmpty {
            rotation = (rotation + 1) % keys.count
            keys = Array(keys[rotation...] + keys[..<rotation])
        }
        for key in keys {
            guard var host = hosts[key] else {
                queuedHosts.remove(key)
                continue
            }
            let limit = host.limiter.limit
            let share = hostShare?.transfersPerHost ?? .max
            // Completions not yet run hold their slot: the queue of them stays bounded.
            while running.count + finished.count + admitted.count < configuration.maxTransfers, host.hasWaiting {
                // This process's share of a cap shared with others holds it back (not the limiter's).
                guard host.active < share else { break }
                guard host.active < limit else {
                    // The host's own limit holds a transfer back: what lets the limiter grow.
                    host.limiter.noteLimited()
                    break
                }
                guard let id = host.next() else { break }
                guard let transfer = waiting[id] else { continue }
                if let delay = host.admissionDelay(now: now) {
                    host.prepend(id)
                    wake = min(wake ?? delay, delay)
                    break
                }
                waiting[id] = nil
                host.active += 1
                host.lastUsed = now
                transfer.limiterTicket = host.limiter.start(now: now)
                admitted.append(transfer)
            }
            if !host.hasWaiting { queuedHosts.remove(key) }
            hosts[key] = host
        }
        if !admitted.isEmpty { fitHostConnectionCap() }
        // Started only once every host entry is written back: a failed start adjusts its host.
        for transfer in admitted { start(transfer) }
        scheduleDelivery()
        if let wake { scheduleDispatch(after: wake) }
    }

    /// Sets curl's per-host connection cap for the transfers about to start: an HTTP/2 host's
    /// streams and a spare while every busy host is known to be on HTTP/2, else room for a
    /// connection per transfer.
    func fitHostConnectionCap() {
        let http2 = Int(CURL_HTTP_VERSION_2_0)
        let onlyHTTP2 = !hosts.values.contains { ($0.active > 0 || $0.hasWaiting) && $0.httpVersion < http2 }
        multi.setMaxHostConnections(onlyHTTP2 ? hostConnectionCaps.onlyHTTP2 : hostConnectionCaps.any)
    }

    func start(_ transfer: Transfer) {
        transfer.resetForHop()
        // Running before anything can fail: `release` then gives the host's slot back.
        running[transfer.id] = transfer
        runningByOwner[transfer.request.owner, default: 0] += 1
        onRunningCountChange?(running.count)
        guard let easy = idleHandles.popLast() ?? Self.newHandle(caFile: configuration.caFile) else {
            release(transfer, .failure(.transport(curlCode: Int32(CURLE_OUT_OF_MEMORY.rawValue))))
            return
        }
        let priorKnowledge = hosts[transfer.hostKey]?.policy.http2PriorKnowledge == true
        guard transfer.configure(easy, wire: rules.wire(for: transfer.canonicalURL), http2PriorKnowledge: priorKnowledge),
              multi.add(easy) else {
            release(transfer, .failure(.invalidHeader))
            return
        }
    }

    /// A new easy handle with the options every request shares (`Transfer.prepare`).
    static func newHandle(caFile: String?) -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        guard Transfer.prepare(easy, caFile: caFile) else {
            curl_easy_cleanup(easy)
            return nil
        }
        return easy
    }
}
