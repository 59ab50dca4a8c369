import CCurl
import Loop

/// Identifies a submitted transfer, for `Fetcher.cancel(_:)`.
public struct TransferID: Hashable, Sendable {
    public let rawValue: UInt64
}

/// All upstream HTTP of packd: queues requests per host, runs them on one curl multi handle on
/// the loop, applies upstream rules and the address policy, follows redirects itself so each hop
/// is re-checked and re-credentialed, and hands back canonical results.
///
/// Loop thread only. Completions always run on the loop thread from a loop callback — never
/// from inside `submit`, `cancel` or `pauseHost`, so callers may call those while holding state.
public final class Fetcher {
    public let configuration: FetchConfiguration
    private let loop: EventLoop
    private let multi: CurlMulti
    private let rules: UpstreamRules
    private let dispatchTimer: LoopTimer
    /// Dispatches asked for without a delay: on the next turn, never within the timer pass or
    /// callback that asked (see `NextTurn`).
    private let dispatchSoon: NextTurn
    private var dispatchDue: ContinuousClock.Instant?

    private var hosts: [String: HostQueue] = [:]
    private var waiting: [UInt64: Transfer] = [:]
    private var running: [UInt64: Transfer] = [:]
    private var finished: [(Transfer, Result<FetchResponse, FetchError>)] = []
    private var idleHandles: [UnsafeMutableRawPointer] = []
    private var nextID: UInt64 = 1
    private var rotation = 0
    private var closed = false

    /// Every finished request with its result, just before its completion runs (metrics: bytes
    /// received, errors by kind). Loop thread.
    public var onFinished: ((Result<FetchResponse, FetchError>) -> Void)?
    /// The number of running transfers, whenever it changes. Loop thread.
    public var onRunningCountChange: ((Int) -> Void)?

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    public init(loop: EventLoop, configuration: FetchConfiguration = FetchConfiguration()) throws(FetchError) {
        guard Self.globalInit else { throw .transport(curlCode: Int32(CURLE_FAILED_INIT.rawValue)) }
        self.configuration = configuration
        self.loop = loop
        self.rules = UpstreamRules(configuration.rules)
        multi = try CurlMulti(loop: loop, limits: .init(maxTotalConnections: configuration.maxTransfers,
                                                        maxHostConnections: configuration.maxTransfersPerHost))
        dispatchTimer = LoopTimer(loop: loop)
        dispatchSoon = NextTurn(loop: loop)
        multi.onDone = { [unowned self] easy, result in self.transferDone(easy, result) }
    }

    /// This process's part of per-host allowances shared with other processes (cluster mode:
    /// the cluster's per-host cap and request rate divided between the live nodes). Each field
    /// further limits the configured one; 0 transfers starts nothing more. Loop thread.
    public struct HostShare: Sendable, Equatable {
        public var transfersPerHost: Int
        public var requestsPerSecondPerHost: Double?

        public init(transfersPerHost: Int, requestsPerSecondPerHost: Double? = nil) {
            self.transfersPerHost = max(0, transfersPerHost)
            self.requestsPerSecondPerHost = requestsPerSecondPerHost
        }
    }

    /// The share in force; nil: the configuration alone.
    public private(set) var hostShare: HostShare?

    /// Changes this process's share (transfers above a smaller one finish; no new one starts
    /// until the host is under it). Loop thread.
    public func setHostShare(_ share: HostShare?) {
        guard share != hostShare else { return }
        let rateChanged = share?.requestsPerSecondPerHost != hostShare?.requestsPerSecondPerHost
        hostShare = share
        if rateChanged {
            for key in Array(hosts.keys) { hosts[key]?.bucket = requestRate.map { TokenBucket(rate: $0, now: .now) } }
        }
        scheduleDispatch(after: .zero)
    }

    /// Transfers one host may have in flight now.
    private var transfersPerHost: Int {
        min(configuration.maxTransfersPerHost, hostShare?.transfersPerHost ?? .max)
    }

    /// New requests per second to one host, nil: unlimited.
    private var requestRate: Double? {
        guard let shared = hostShare?.requestsPerSecondPerHost else { return configuration.requestsPerSecondPerHost }
        return min(shared, configuration.requestsPerSecondPerHost ?? .infinity)
    }

    /// Transfers started and not finished.
    public var runningCount: Int { running.count }
    /// Transfers waiting for a slot, a rate token or the end of a host pause.
    public var waitingCount: Int { waiting.count }

    /// Transfers of `owner` waiting, running, or finished with their completion still to run
    /// (a download checks its own bookkeeping against it).
    public func transferCount(owner: UInt64) -> Int {
        waiting.values.count { $0.request.owner == owner } + running.values.count { $0.request.owner == owner }
            + finished.count { $0.0.request.owner == owner }
    }

    /// Queues `request`; `completion` runs once, on the loop thread, with a response (any HTTP
    /// status) or a `FetchError`.
    @discardableResult
    public func submit(_ request: FetchRequest,
                       completion: @escaping (Result<FetchResponse, FetchError>) -> Void) -> TransferID {
        let id = nextID
        nextID += 1
        let transfer: Transfer
        do throws(FetchError) {
            try request.validate()
            let target = try WireTarget(rules.wire(for: request.url).url)
            transfer = Transfer(id: id, request: request, target: target, policy: configuration.addressPolicy,
                                completion: completion)
        } catch {
            let rejected = Transfer(id: id, request: request, target: nil, policy: configuration.addressPolicy,
                                    completion: completion)
            finished.append((rejected, .failure(closed ? .shutdown : error)))
            scheduleDispatch(after: .zero)
            return TransferID(rawValue: id)
        }
        if closed {
            finished.append((transfer, .failure(.shutdown)))
        } else {
            waiting[id] = transfer
            hosts[transfer.hostKey, default: newHostQueue()].append(id)
        }
        scheduleDispatch(after: .zero)
        return TransferID(rawValue: id)
    }

    /// Stops a transfer (waiting or running); its completion gets `.cancelled` on a later turn.
    public func cancel(_ id: TransferID) {
        if let transfer = waiting.removeValue(forKey: id.rawValue) {
            finished.append((transfer, .failure(.cancelled)))
        } else if let transfer = running[id.rawValue] {
            abort(transfer, with: .cancelled)
        } else {
            return
        }
        scheduleDispatch(after: .zero)
    }

    /// Cancels every transfer submitted with `owner` (a pack being suspended or deleted).
    public func cancelAll(owner: UInt64) {
        for transfer in waiting.values where transfer.request.owner == owner {
            waiting[transfer.id] = nil
            finished.append((transfer, .failure(.cancelled)))
        }
        for transfer in running.values where transfer.request.owner == owner {
            abort(transfer, with: .cancelled)
        }
        scheduleDispatch(after: .zero)
    }

    /// Starts no new transfer to the host serving `url` before `until` (429/503 `Retry-After`).
    /// Transfers already running continue. A later pause never shortens an earlier one.
    public func pauseHost(of url: String, until: ContinuousClock.Instant) {
        guard !closed, let target = try? WireTarget(rules.wire(for: url).url) else { return }
        var host = hosts[target.hostKey] ?? newHostQueue()
        host.pausedUntil = max(host.pausedUntil ?? until, until)
        hosts[target.hostKey] = host
    }

    /// Fails everything with `.shutdown` (completions run now) and frees curl and uv resources.
    public func shutdown() {
        guard !closed else { return }
        closed = true
        for transfer in waiting.values { finished.append((transfer, .failure(.shutdown))) }
        waiting.removeAll()
        for transfer in running.values { abort(transfer, with: .shutdown) }
        deliverFinished()
        hosts.removeAll()
        for easy in idleHandles { curl_easy_cleanup(easy) }
        idleHandles.removeAll()
        multi.close()
        dispatchTimer.close()
        dispatchSoon.close()
    }

    private func newHostQueue() -> HostQueue {
        var host = HostQueue()
        if let rate = requestRate {
            host.bucket = TokenBucket(rate: rate, now: .now)
        }
        return host
    }

    // MARK: Dispatch

    /// Runs `dispatch` on a later loop turn: curl handles are only ever added from a uv timer or
    /// idle callback, never from inside curl or a caller's stack.
    private func scheduleDispatch(after delay: Duration) {
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

    private func dispatch() {
        dispatchDue = nil
        dispatchTimer.stop()
        dispatchSoon.cancel()
        deliverFinished()
        guard !closed else { return }
        let now = ContinuousClock.now
        var wake: Duration?
        var admitted: [Transfer] = []
        // Start each pass at a different host so a host with a deep queue cannot keep every slot
        // the overall limit frees.
        var keys = Array(hosts.keys)
        if !keys.isEmpty {
            rotation = (rotation + 1) % keys.count
            keys = Array(keys[rotation...] + keys[..<rotation])
        }
        for key in keys {
            guard var host = hosts[key] else { continue }
            while running.count + admitted.count < configuration.maxTransfers,
                  host.active < transfersPerHost, let id = host.next() {
                guard let transfer = waiting[id] else { continue }
                if let delay = host.admissionDelay(now: now) {
                    host.prepend(id)
                    wake = min(wake ?? delay, delay)
                    break
                }
                waiting[id] = nil
                host.active += 1
                admitted.append(transfer)
            }
            hosts[key] = host.isIdle(now: now) && host.bucket == nil ? nil : host
        }
        // Started only once every host entry is written back: a failed start adjusts its host.
        for transfer in admitted { start(transfer) }
        deliverFinished()
        if let wake { scheduleDispatch(after: wake) }
    }

    private func start(_ transfer: Transfer) {
        transfer.resetForHop()
        // Running before anything can fail: `release` then gives the host's slot back.
        running[transfer.id] = transfer
        onRunningCountChange?(running.count)
        guard let easy = idleHandles.popLast() ?? Self.newHandle() else {
            release(transfer, .failure(.transport(curlCode: Int32(CURLE_OUT_OF_MEMORY.rawValue))))
            return
        }
        guard transfer.configure(easy, wire: rules.wire(for: transfer.canonicalURL)), multi.add(easy) else {
            release(transfer, .failure(.invalidHeader))
            return
        }
    }

    /// A new easy handle with the options every request shares (`Transfer.prepare`).
    private static func newHandle() -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        guard Transfer.prepare(easy) else {
            curl_easy_cleanup(easy)
            return nil
        }
        return easy
    }

    // MARK: Completion

    private func transferDone(_ easy: UnsafeMutableRawPointer, _ result: CURLcode) {
        defer { deliverFinished() }
        var pointer: UnsafeMutableRawPointer?
        packd_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer)
        guard let pointer else { return }
        let transfer = Unmanaged<Transfer>.fromOpaque(pointer).takeUnretainedValue()
        guard result == CURLE_OK else {
            let error = FetchError.from(result, blocked: transfer.refusedAddress, exceeded: transfer.exceededLimit,
                                        bodyLimit: transfer.request.maxBodyBytes)
            release(transfer, .failure(error))
            return
        }
        var status = 0
        packd_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        if [301, 302, 303, 307, 308].contains(status) {
            var location: UnsafeMutablePointer<CChar>?
            packd_easy_getinfo_string(easy, CURLINFO_REDIRECT_URL, &location)
            if let location {
                follow(transfer, to: String(cString: location))
                return
            }
        }
        let response = FetchResponse(status: status, headers: transfer.headers, body: transfer.body,
                                     effectiveURL: transfer.canonicalURL, redirects: transfer.redirects)
        release(transfer, .success(response))
    }

    /// Queues the next hop as a fresh request to the (possibly new) host, with the rules applied
    /// to its canonical URL — the upstream's Location is never trusted to carry our credentials.
    private func follow(_ transfer: Transfer, to location: String) {
        guard transfer.redirects < configuration.maxRedirects else {
            release(transfer, .failure(.tooManyRedirects(limit: configuration.maxRedirects)))
            return
        }
        let canonical = rules.canonical(forWire: location)
        let target: WireTarget
        do throws(FetchError) {
            target = try WireTarget(rules.wire(for: canonical).url)
        } catch {
            release(transfer, .failure(error))
            return
        }
        detach(transfer)
        transfer.redirects += 1
        transfer.canonicalURL = canonical
        transfer.retarget(target)
        waiting[transfer.id] = transfer
        hosts[target.hostKey, default: newHostQueue()].prepend(transfer.id)
        scheduleDispatch(after: .zero)
    }

    private func abort(_ transfer: Transfer, with error: FetchError) {
        release(transfer, .failure(error))
    }

    /// Takes a running transfer off curl and the host's count, and queues its completion.
    private func release(_ transfer: Transfer, _ result: Result<FetchResponse, FetchError>) {
        detach(transfer)
        finished.append((transfer, result))
    }

    private func detach(_ transfer: Transfer) {
        guard running.removeValue(forKey: transfer.id) != nil else { return }
        onRunningCountChange?(running.count)
        hosts[transfer.hostKey]?.active -= 1
        if let easy = transfer.easy {
            multi.remove(easy)
            if idleHandles.count < configuration.maxTransfers {
                idleHandles.append(easy)
            } else {
                curl_easy_cleanup(easy)
            }
        }
        transfer.detach()
        scheduleDispatch(after: .zero)
    }

    private var delivering = false

    /// Runs queued completions. Not re-entrant: a completion that cancels another transfer just
    /// adds to the queue this loop is draining.
    private func deliverFinished() {
        guard !delivering else { return }
        delivering = true
        defer { delivering = false }
        while !finished.isEmpty {
            let (transfer, result) = finished.removeFirst()
            onFinished?(result)
            transfer.completion(result)
        }
    }

}
