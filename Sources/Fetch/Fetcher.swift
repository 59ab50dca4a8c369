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
/// Loop thread only (checked in debug builds). Completions always run on the loop thread from a loop callback — never
/// from inside `submit`, `cancel` or `pauseHost`, so callers may call those while holding state.
public final class Fetcher {
    public let configuration: FetchConfiguration
    let loop: EventLoop
    let multi: CurlMulti
    /// curl's per-host connection cap while only HTTP/2 hosts are busy, and while any other is
    /// (`FetchConfiguration.hostConnectionCap`), worked out once: the rules do not change.
    let hostConnectionCaps: (onlyHTTP2: Int, any: Int)
    let rules: UpstreamRules
    let dispatchTimer: LoopTimer
    /// Dispatches asked for without a delay: on the next turn, never within the timer pass or
    /// callback that asked (see `NextTurn`).
    let dispatchSoon: NextTurn
    /// Runs the next share of `finished` (`completionsPerTurn`).
    let delivery: NextTurn
    var dispatchDue: ContinuousClock.Instant?

    var hosts: [String: HostQueue] = [:]
    /// Hosts with transfers waiting: what `dispatch` visits.
    var queuedHosts: Set<String> = []
    /// Transfers running per owner, and the hosts each owner has sent to (for its progress).
    var runningByOwner: [UInt64: Int] = [:]
    var ownerHosts: [UInt64: Set<String>] = [:]
    var waiting: [UInt64: Transfer] = [:]
    /// Posts waiting to start: they bypass the hosts' queues and limits (their sender keeps its
    /// own budget), so a slow webhook receiver never holds a tile slot nor waits behind tiles.
    var waitingPosts: [UInt64] = []
    var running: [UInt64: Transfer] = [:]
    var finished: [(Transfer, Result<FetchResponse, FetchError>)] = []
    var idleHandles: [UnsafeMutableRawPointer] = []
    var nextID: UInt64 = 1
    var rotation = 0
    var closed = false
    var delivering = false

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

    static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

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
        loop.assertInLoopThread()
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

    static func status(_ host: HostQueue) -> HostStatus {
        HostStatus(host: host.name, limit: host.limiter.limit, inFlight: host.active, waiting: host.waitingCount,
                   adaptive: host.limiter.adaptive, httpVersion: host.httpVersion,
                   latency: host.limiter.lastRoundLatency, baseline: host.limiter.baseline)
    }

    /// Queues `request`; `completion` runs once, on the loop thread, with a response (any HTTP
    /// status) or a `FetchError`.
    @discardableResult
    public func submit(_ request: FetchRequest,
                       completion: @escaping (Result<FetchResponse, FetchError>) -> Void) -> TransferID {
        loop.assertInLoopThread()
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
        loop.assertInLoopThread()
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
        loop.assertInLoopThread()
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
        loop.assertInLoopThread()
        guard !closed, let target = try? WireTarget(rules.wire(for: url).url) else { return }
        let key = hostQueue(for: target, canonical: url)
        let paused = hosts[key]?.pausedUntil ?? until
        hosts[key]?.pausedUntil = max(paused, until)
    }

    /// Fails everything with `.shutdown` (completions run now) and frees curl and uv resources.
    public func shutdown() {
        loop.assertInLoopThread()
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
}
