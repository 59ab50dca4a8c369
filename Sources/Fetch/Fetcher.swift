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
/// How many transfers a host gets is learnt per host (`HostConcurrencyLimiter`), under the
/// explicit caps (a rule's `max_transfers`, `--max-transfers-per-host`), which always win. HTTP/2
/// is used fully: curl multiplexes up to `FetchConfiguration.streamsPerConnection` streams on a
/// connection (fewer when the server announces fewer), HTTPS transfers wait for a connection that
/// may multiplex (`CURLOPT_PIPEWAIT`) instead of each opening their own, and while only HTTP/2
/// hosts are busy the per-host connection cap is what their streams need plus a spare
/// (`FetchConfiguration.hostConnectionCap`): a host at its ceiling of 100 gets 5 connections.
/// HTTP/1.1 hosts get a connection per transfer, which the cap allows up to the host's limit
/// while one of them is busy.
///
/// Loop thread only. Completions always run on the loop thread from a loop callback — never
/// from inside `submit`, `cancel` or `pauseHost`, so callers may call those while holding state.
public final class Fetcher {
    public let configuration: FetchConfiguration
    private let loop: EventLoop
    private let multi: CurlMulti
    /// curl's per-host connection cap while only HTTP/2 hosts are busy, and while any other is
    /// (`FetchConfiguration.hostConnectionCap`), worked out once: the rules do not change.
    private let hostConnectionCaps: (onlyHTTP2: Int, any: Int)
    private let rules: UpstreamRules
    private let dispatchTimer: LoopTimer
    /// Dispatches asked for without a delay: on the next turn, never within the timer pass or
    /// callback that asked (see `NextTurn`).
    private let dispatchSoon: NextTurn
    /// Runs the next share of `finished` (`completionsPerTurn`).
    private let delivery: NextTurn
    private var dispatchDue: ContinuousClock.Instant?

    private var hosts: [String: HostQueue] = [:]
    /// Hosts with transfers waiting: what `dispatch` visits.
    private var queuedHosts: Set<String> = []
    /// Transfers running per owner, and the hosts each owner has sent to (for its progress).
    private var runningByOwner: [UInt64: Int] = [:]
    private var ownerHosts: [UInt64: Set<String>] = [:]
    private var waiting: [UInt64: Transfer] = [:]
    /// Posts waiting to start: they bypass the hosts' queues and limits (their sender keeps its
    /// own budget), so a slow webhook receiver never holds a tile slot nor waits behind tiles.
    private var waitingPosts: [UInt64] = []
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
    /// Every finished transfer's host, status or failure, latency, and the host's limit after it
    /// (per-host metrics). Loop thread.
    public var onHostSample: ((HostSample) -> Void)?

    /// Hosts remembered with nothing to do (their learnt limit kept) before the least recently
    /// used are forgotten.
    static let maxRememberedHosts = 256
    /// Owners whose hosts are remembered for `throttle(owner:)`, and hosts per owner.
    static let maxOwnersTracked = 4096
    static let maxHostsPerOwner = 16
    /// How long after a cut of its limit a host still reports as backing off.
    public static let backingOffReported: Duration = .seconds(5)

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    public init(loop: EventLoop, configuration: FetchConfiguration = FetchConfiguration()) throws(FetchError) {
        guard Self.globalInit else { throw .transport(curlCode: Int32(CURLE_FAILED_INIT.rawValue)) }
        self.configuration = configuration
        self.loop = loop
        self.rules = UpstreamRules(configuration.rules)
        hostConnectionCaps = (configuration.hostConnectionCap(onlyHTTP2HostsBusy: true),
                              configuration.hostConnectionCap(onlyHTTP2HostsBusy: false))
        multi = try CurlMulti(loop: loop, limits: .init(maxTotalConnections: configuration.maxTransfers,
                                                        maxHostConnections: hostConnectionCaps.any,
                                                        maxStreamsPerConnection: FetchConfiguration.streamsPerConnection))
        dispatchTimer = LoopTimer(loop: loop)
        dispatchSoon = NextTurn(loop: loop)
        delivery = NextTurn(loop: loop)
        multi.onDone = { [unowned self] easy, result in self.transferDone(easy, result) }
    }

    /// This process's part of per-host allowances shared with other processes (cluster mode:
    /// the cluster's per-host cap and request rate divided between the live nodes). Each field
    /// further limits what the host's own limit and rate allow; 0 transfers starts nothing more.
    public struct HostShare: Sendable, Equatable {
        public var transfersPerHost: Int
        public var requestsPerSecondPerHost: Double?

        public init(transfersPerHost: Int, requestsPerSecondPerHost: Double? = nil) {
            self.transfersPerHost = max(0, transfersPerHost)
            self.requestsPerSecondPerHost = requestsPerSecondPerHost
        }
    }

    /// The share in force; nil: the configuration and the rules alone.
    public private(set) var hostShare: HostShare?

    /// Changes this process's share (transfers above a smaller one finish; no new one starts
    /// until the host is under it). Loop thread.
    public func setHostShare(_ share: HostShare?) {
        guard share != hostShare else { return }
        let rateChanged = share?.requestsPerSecondPerHost != hostShare?.requestsPerSecondPerHost
        hostShare = share
        if rateChanged {
            for key in Array(hosts.keys) { applyPolicy(to: &hosts[key]!) }
        }
        scheduleDispatch(after: .zero)
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

    /// The owners with transfers on the wire or hosts that may hold them back: whose
    /// `transfersInFlight` and `throttle` can say something.
    public var ownersSending: Set<UInt64> {
        Set(runningByOwner.keys).union(ownerHosts.keys)
    }

    /// Transfers of `owner` on the wire now (a pack's `transfers_in_flight`).
    public func transfersInFlight(owner: UInt64) -> Int {
        runningByOwner[owner] ?? 0
    }

    /// What holds `owner` back, if anything, among the hosts it has sent to since its last
    /// `cancelAll`: a `Retry-After` pause first (the latest-ending), else the host whose limit
    /// was cut most recently (within `backingOffReported`). A pack's `throttled`.
    public func throttle(owner: UInt64) -> HostThrottle? {
        guard let keys = ownerHosts[owner] else { return nil }
        let now = ContinuousClock.now
        var paused: HostThrottle?
        var backingOff: (HostThrottle, ContinuousClock.Instant)?
        for key in keys {
            guard let host = hosts[key], let throttle = host.throttle(now: now, recentCut: Self.backingOffReported) else {
                continue
            }
            if let until = throttle.until {
                if until > paused?.until ?? now { paused = throttle }
            } else if let cut = host.limiter.lastCut?.at, cut > backingOff?.1 ?? .now - .seconds(86_400) {
                backingOff = (throttle, cut)
            }
        }
        return paused ?? backingOff?.0
    }

    /// Every remembered host's limit, load and latency (metrics, tests).
    public func hostStatuses() -> [HostStatus] {
        hosts.values.map(Self.status).sorted { $0.host < $1.host }
    }

    /// The status of the host serving `url` (after the rules), nil if it was never used.
    public func hostStatus(of url: String) -> HostStatus? {
        guard let target = try? WireTarget(rules.wire(for: url).url) else { return nil }
        return hosts[target.hostKey].map(Self.status)
    }

    private static func status(_ host: HostQueue) -> HostStatus {
        HostStatus(host: host.name, limit: host.limiter.limit, inFlight: host.active, waiting: host.waitingCount,
                   adaptive: host.limiter.adaptive, httpVersion: host.httpVersion,
                   latency: host.limiter.lastRoundLatency, baseline: host.limiter.baseline)
    }

    /// Queues `request`; `completion` runs once, on the loop thread, with a response (any HTTP
    /// status) or a `FetchError`.
    @discardableResult
    public func submit(_ request: FetchRequest,
                       completion: @escaping (Result<FetchResponse, FetchError>) -> Void) -> TransferID {
        let id = nextID
        nextID += 1
        let transfer: Transfer
        let target: WireTarget
        do throws(FetchError) {
            try request.validate()
            target = try WireTarget(rules.wire(for: request.url).url)
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
        } else if request.post != nil {
            waiting[id] = transfer
            waitingPosts.append(id)
        } else {
            waiting[id] = transfer
            enqueue(id, on: target, canonical: request.url, owner: request.owner)
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

    /// Cancels every transfer submitted with `owner` (a pack being suspended or deleted), and
    /// forgets the hosts it used.
    public func cancelAll(owner: UInt64) {
        ownerHosts[owner] = nil
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
        let key = hostQueue(for: target, canonical: url)
        let paused = hosts[key]?.pausedUntil ?? until
        hosts[key]?.pausedUntil = max(paused, until)
    }

    /// Fails everything with `.shutdown` (completions run now) and frees curl and uv resources.
    public func shutdown() {
        guard !closed else { return }
        closed = true
        for transfer in waiting.values { finished.append((transfer, .failure(.shutdown))) }
        waiting.removeAll()
        for transfer in running.values { abort(transfer, with: .shutdown) }
        deliverFinished()
        delivery.close()
        hosts.removeAll()
        queuedHosts.removeAll()
        for easy in idleHandles { curl_easy_cleanup(easy) }
        idleHandles.removeAll()
        multi.close()
        dispatchTimer.close()
        dispatchSoon.close()
    }

    // MARK: Hosts

    /// Queues a waiting transfer on its host and remembers the host for its owner.
    private func enqueue(_ id: UInt64, on target: WireTarget, canonical: String, owner: UInt64, first: Bool = false) {
        let key = hostQueue(for: target, canonical: canonical)
        if first { hosts[key]?.prepend(id) } else { hosts[key]?.append(id) }
        queuedHosts.insert(key)
        if ownerHosts[owner]?.contains(key) != true {
            if ownerHosts[owner] == nil, ownerHosts.count >= Self.maxOwnersTracked, let any = ownerHosts.keys.first {
                ownerHosts[any] = nil
            }
            if ownerHosts[owner, default: []].count < Self.maxHostsPerOwner { ownerHosts[owner, default: []].insert(key) }
        }
    }

    /// The key of `target`'s host entry, made if new, with the policy of the rules matching
    /// `canonical` applied (the stricter of what earlier requests brought).
    private func hostQueue(for target: WireTarget, canonical: String) -> String {
        let key = target.hostKey
        let policy = rules.policy(for: canonical)
        if var host = hosts[key] {
            if !policy.isEmpty {
                let tightened = host.policy.tightened(by: policy)
                if tightened != host.policy {
                    host.policy = tightened
                    applyPolicy(to: &host)
                    hosts[key] = host
                }
            }
            return key
        }
        if hosts.count >= Self.maxRememberedHosts { forgetIdleHosts() }
        let now = ContinuousClock.now
        let defaultPort = target.scheme == "https" ? 443 : 80
        let name = target.port == defaultPort ? Self.bracketed(target.host) : "\(Self.bracketed(target.host)):\(target.port)"
        let (maximum, adaptive) = ceiling(policy, httpVersion: 0)
        var host = HostQueue(name: name, limiter: HostConcurrencyLimiter(settings: configuration.limiter, maximum: maximum,
                                                                         adaptive: adaptive), now: now)
        host.policy = policy
        applyPolicy(to: &host)
        hosts[key] = host
        return key
    }

    private static func bracketed(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }

    /// Sets the host's ceiling and rate from its policy, the server-wide settings and its protocol:
    /// a rule's `max_transfers`, else `--max-transfers-per-host`, else the protocol's ceiling; a
    /// rule's `adaptive: false` pins the limit to that cap (or `fixedTransfersPerHost`).
    private func applyPolicy(to host: inout HostQueue) {
        let (maximum, adaptive) = ceiling(host.policy, httpVersion: host.httpVersion)
        host.limiter.setMaximum(maximum, adaptive: adaptive)
        var rate = host.policy.requestsPerSecond ?? configuration.requestsPerSecondPerHost
        if let shared = hostShare?.requestsPerSecondPerHost { rate = min(shared, rate ?? .infinity) }
        if let rate, host.bucket?.rate != rate {
            host.bucket = TokenBucket(rate: rate, now: .now)
        } else if rate == nil {
            host.bucket = nil
        }
    }

    private func ceiling(_ policy: HostPolicy, httpVersion: Int) -> (maximum: Int, adaptive: Bool) {
        let explicit = policy.maxTransfers ?? configuration.maxTransfersPerHost
        if policy.adaptive == false { return (explicit ?? FetchConfiguration.fixedTransfersPerHost, false) }
        let protocolCeiling = httpVersion >= Int(CURL_HTTP_VERSION_2_0)
            ? configuration.limiter.http2Maximum : configuration.limiter.http1Maximum
        return (explicit ?? protocolCeiling, true)
    }

    /// Drops the least recently used idle hosts, down to three quarters of the bound.
    private func forgetIdleHosts() {
        let now = ContinuousClock.now
        let idle = hosts.filter { $0.value.isIdle(now: now) }.sorted { $0.value.lastUsed < $1.value.lastUsed }
        for (key, _) in idle.prefix(max(0, hosts.count - Self.maxRememberedHosts * 3 / 4)) {
            hosts[key] = nil
        }
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
    private func fitHostConnectionCap() {
        let http2 = Int(CURL_HTTP_VERSION_2_0)
        let onlyHTTP2 = !hosts.values.contains { ($0.active > 0 || $0.hasWaiting) && $0.httpVersion < http2 }
        multi.setMaxHostConnections(onlyHTTP2 ? hostConnectionCaps.onlyHTTP2 : hostConnectionCaps.any)
    }

    private func start(_ transfer: Transfer) {
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
    private static func newHandle(caFile: String?) -> UnsafeMutableRawPointer? {
        guard let easy = curl_easy_init() else { return nil }
        guard Transfer.prepare(easy, caFile: caFile) else {
            curl_easy_cleanup(easy)
            return nil
        }
        return easy
    }

    // MARK: Completion

    private func transferDone(_ easy: UnsafeMutableRawPointer, _ result: CURLcode) {
        defer { scheduleDelivery() }
        var pointer: UnsafeMutableRawPointer?
        packd_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer)
        guard let pointer else { return }
        let transfer = Unmanaged<Transfer>.fromOpaque(pointer).takeUnretainedValue()
        // A post that keeps only a prefix of a long answer stopped reading it: still an answer.
        guard result == CURLE_OK || transfer.keptBodyPrefix else {
            let error = FetchError.from(result, blocked: transfer.refusedAddress, exceeded: transfer.exceededLimit,
                                        bodyLimit: transfer.request.maxBodyBytes,
                                        range: transfer.rangeFailure ?? transfer.rangeProblem(status: transfer.status))
            measure(transfer, easy: easy, outcome: .failure(error))
            release(transfer, .failure(error))
            return
        }
        var status = 0
        packd_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        measure(transfer, easy: easy, outcome: .success(status))
        if transfer.request.post == nil, [301, 302, 303, 307, 308].contains(status) {
            var location: UnsafeMutablePointer<CChar>?
            packd_easy_getinfo_string(easy, CURLINFO_REDIRECT_URL, &location)
            if let location {
                follow(transfer, to: String(cString: location))
                return
            }
        }
        if let problem = transfer.completedRangeProblem(status: status) { return release(transfer, .failure(problem)) }
        let response = FetchResponse(status: status, headers: transfer.headers, body: transfer.body,
                                     effectiveURL: transfer.canonicalURL, redirects: transfer.redirects)
        release(transfer, .success(response))
    }

    /// Tells the host's limiter (and `onHostSample`) how a transfer went: its latency from request
    /// sent to last byte (connection set-up and waiting for a stream excluded: they are not the
    /// server's queue), and whether it was a "slow down". Our own client being the bottleneck
    /// shows in the rounds' throughput instead (the slow start's exit).
    private func measure(_ transfer: Transfer, easy: UnsafeMutableRawPointer, outcome: Result<Int, FetchError>) {
        guard transfer.request.post == nil, var host = hosts[transfer.hostKey] else { return }
        var total: curl_off_t = 0
        var pretransfer: curl_off_t = 0
        packd_easy_getinfo_off(easy, CURLINFO_TOTAL_TIME_T, &total)
        packd_easy_getinfo_off(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer)
        let latency = Duration.microseconds(Int64(max(0, total - pretransfer)))
        let signal: HostConcurrencyLimiter.Signal
        switch outcome {
        case .success(let status):
            var version = 0
            packd_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
            if version != 0, version != host.httpVersion {
                host.httpVersion = version
                applyPolicy(to: &host)
            }
            signal = switch status {
            case 429, 503: .overloaded(.rateLimited)
            case ..<500: .answered(latency: latency)
            default: .other
            }
        case .failure(.timedOut), .failure(.connectionReset), .failure(.truncatedBody):
            signal = .overloaded(.errors)
        case .failure:
            signal = .other
        }
        let now = ContinuousClock.now
        if let ticket = transfer.limiterTicket {
            host.limiter.finished(signal, ticket: ticket, inFlight: host.active, now: now)
        }
        host.lastUsed = now
        hosts[transfer.hostKey] = host
        onHostSample?(HostSample(host: host.name, status: try? outcome.get(), error: outcome.failureValue,
                                 latency: latency, limit: host.limiter.limit))
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
        enqueue(transfer.id, on: target, canonical: canonical, owner: transfer.request.owner, first: true)
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
        let owner = transfer.request.owner
        runningByOwner[owner] = (runningByOwner[owner] ?? 1) > 1 ? runningByOwner[owner]! - 1 : nil
        onRunningCountChange?(running.count)
        if transfer.request.post == nil { hosts[transfer.hostKey]?.active -= 1 }
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

    /// How many completions run in one loop turn. Each runs its owner's bookkeeping (a
    /// download's store write, its retries, its next requests): with a host's limit at 128, a
    /// turn that ran every completion curl had just reported held the loop — and every API
    /// request waiting on it — for milliseconds (GET /v1/packs/{id} p99 under a download went
    /// from 5 to 20 ms). The rest run on the following turns, between which the loop polls its
    /// sockets; they keep their transfer slots meanwhile, so the queue stays bounded.
    static let completionsPerTurn = 16

    /// Runs the next `completionsPerTurn` completions on the next loop turn, not inside curl's
    /// callbacks or a caller's stack.
    private func scheduleDelivery() {
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
    private func deliverFinished(atMost limit: Int = .max) {
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
