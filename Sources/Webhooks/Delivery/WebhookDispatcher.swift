import Fetch
import Logging
import Loop
import Packs

/// Sends the outbox on the loop: polls the store for due deliveries, claims what its budget
/// allows (a lease, riding the writer's open batch, so downloads' batches are never cut), signs
/// and posts each through the fetcher — outside the tile hosts' queues and limits — and records
/// each attempt with what follows (delivered, retried at, failed, endpoint disabled).
///
/// Its budget is small and its own: at most `maxInFlight` attempts, `perEndpoint` per endpoint
/// across every node, so a receiver that never answers holds one slot for at most `timeout`
/// and a slow one never delays the others. Loop thread only.
public final class WebhookDispatcher {
    public struct Configuration: Sendable {
        public var maxInFlight: Int
        public var perEndpoint: Int
        /// How often the store is asked whether something is due (also what another node's
        /// rows wait at most, beside `wake`).
        public var pollInterval: Duration
        /// One attempt, connecting included.
        public var timeout: Duration
        /// Answer bodies are read to this; the attempt log keeps 1 KiB.
        public var maxResponseBytes: Int
        public var schedule: RetrySchedule
        /// An endpoint that failed every attempt for this long is disabled.
        public var disableAfter: Duration
        /// How long a claim holds a delivery; another node may take it after (a dead node's).
        public var lease: Duration
        /// SQLite mode: the leases in the file are a dead process's, given back at start.
        public var releasesLeasesAtStart: Bool
        /// Finished deliveries are kept this long.
        public var history: Duration

        public init(maxInFlight: Int = 16, perEndpoint: Int = 4, pollInterval: Duration = .milliseconds(250),
                    timeout: Duration = .seconds(10), maxResponseBytes: Int = 64 << 10, schedule: RetrySchedule = RetrySchedule(),
                    disableAfter: Duration = .seconds(5 * 86_400), lease: Duration = .seconds(30), releasesLeasesAtStart: Bool = true,
                    history: Duration = .seconds(14 * 86_400)) {
            self.maxInFlight = max(1, maxInFlight)
            self.perEndpoint = max(1, min(perEndpoint, self.maxInFlight))
            self.pollInterval = pollInterval
            self.timeout = timeout
            self.maxResponseBytes = maxResponseBytes
            self.schedule = schedule
            self.disableAfter = disableAfter
            self.lease = max(lease, timeout + .seconds(5))
            self.releasesLeasesAtStart = releasesLeasesAtStart
            self.history = history
        }
    }

    /// How an attempt ended, for metrics and tests.
    public struct Attempt: Sendable {
        public var delivery: ClaimedWebhookDelivery
        public var status: Int?
        public var error: FetchError?
        public var next: WebhookAttemptOutcome.Next
        public var duration: Duration
    }

    /// The fetcher owner of every webhook transfer (no pack has it).
    public static let transferOwner: UInt64 = .max - 26

    public let configuration: Configuration
    /// Renders a pack document from a message's snapshot (the API's renderer); nil: unreadable.
    public typealias PackRenderer = @Sendable (WebhookPackSnapshot) -> [UInt8]?

    private let loop: EventLoop
    private let store: any PackStore
    private let fetcher: Fetcher
    private let render: PackRenderer
    private let owner: String
    private let clock: @Sendable () -> Int64
    private let logger: Logger
    private var timer: LoopTimer?
    private var inFlight: [Int64: TransferID] = [:]
    private var polling = false
    private var pollAgain = false
    private var lastPrune: Int64 = 0
    private var stopped = false
    private var random = SystemRandomNumberGenerator()

    /// Every attempt once recorded (metrics). Loop thread.
    public var onAttempt: ((Attempt) -> Void)?
    /// The outbox after each poll (metrics: pending, oldest). Loop thread.
    public var onQueueStatus: ((WebhookQueueStatus, _ now: Int64) -> Void)?

    /// `owner` names this process in leases (unique per process and node).
    public init(loop: EventLoop, store: any PackStore, fetcher: Fetcher, owner: String, configuration: Configuration = Configuration(),
                clock: @escaping @Sendable () -> Int64 = WebhookStoreRules.nowMilliseconds,
                logger: Logger = Logger(label: "packd.webhooks"), render: @escaping PackRenderer) {
        self.loop = loop
        self.store = store
        self.fetcher = fetcher
        self.owner = owner
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.render = render
    }

    /// Attempts in flight now.
    public var attemptsInFlight: Int { inFlight.count }

    public func start() {
        let timer = LoopTimer(loop: loop)
        timer.unref()
        self.timer = timer
        let interval = LoopTimer.milliseconds(configuration.pollInterval)
        guard configuration.releasesLeasesAtStart else {
            timer.start(after: interval, repeat: interval) { [weak self] in self?.poll() }
            return poll()
        }
        store.write({ database in try database.releaseWebhookLeases() }) { [weak self] result in
            guard let self else { return }
            if case .failure(let error) = result { logger.error("giving back the webhook leases failed", metadata: ["error": "\(error)"]) }
            timer.start(after: interval, repeat: interval) { [weak self] in self?.poll() }
            poll()
        }
    }

    /// Something was written to the outbox (a ping, a retry): look now rather than at the next poll.
    public func wake() {
        poll()
    }

    /// Stops polling and cancels the attempts in flight (their leases expire, or are given back
    /// at the next start in SQLite mode; they are attempted again).
    public func shutdown() {
        stopped = true
        timer?.close()
        timer = nil
        for transfer in inFlight.values { fetcher.cancel(transfer) }
    }

    // MARK: Polling and claims

    private func poll() {
        guard !stopped else { return }
        guard !polling else {
            pollAgain = true
            return
        }
        polling = true
        let now = clock()
        store.read({ reader in try reader.webhookQueueStatus(now: now) }) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                logger.warning("reading the webhook outbox failed", metadata: ["error": "\(error)"])
                finishPoll()
            case .success(let status):
                onQueueStatus?(status, now)
                pruneIfDue(now)
                guard let due = status.nextDueAt, due <= clock(), inFlight.count < configuration.maxInFlight else {
                    return finishPoll()
                }
                claim()
            }
        }
    }

    private func finishPoll() {
        polling = false
        if pollAgain {
            pollAgain = false
            poll()
        }
    }

    private func claim() {
        let (owner, now) = (owner, clock())
        let leaseUntil = now + RetrySchedule.milliseconds(configuration.lease)
        let (limit, perEndpoint) = (configuration.maxInFlight - inFlight.count, configuration.perEndpoint)
        riding({ database in
            try database.claimWebhookDeliveries(owner: owner, now: now, leaseUntil: leaseUntil, limit: limit, perEndpoint: perEndpoint)
        }, then: { me, result in me.claimed(result, limit: limit) })
    }

    private func claimed(_ result: Result<[ClaimedWebhookDelivery], any Error>, limit: Int) {
        switch result {
        case .failure(let error):
            logger.warning("claiming webhook deliveries failed", metadata: ["error": "\(error)"])
        case .success(let claimed):
            for delivery in claimed { send(delivery) }
            // A full claim may have left more due: look again at once.
            if claimed.count == limit { pollAgain = true }
        }
        finishPoll()
    }

    private func pruneIfDue(_ now: Int64) {
        guard now - lastPrune >= 3_600_000 else { return }
        lastPrune = now
        let before = now - RetrySchedule.milliseconds(configuration.history)
        store.inBatch({ database in try database.pruneWebhookDeliveries(before: before) }, then: nil)
    }

    /// `operation` riding the writer's open batch; `then` on the loop once it committed.
    private func riding<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                                     then: @escaping (WebhookDispatcher, Result<T, any Error>) -> Void) {
        let (me, then) = (LoopBound(self, loop: loop), LoopBound(then, loop: loop))
        store.inBatch(operation, then: { result in then.value(me.value, result) })
    }

    // MARK: Attempts

    private func send(_ delivery: ClaimedWebhookDelivery) {
        guard !stopped else { return }
        let started = ContinuousClock.now
        guard let data = payload(of: delivery) else {
            // Nothing sendable can come of this message: fail it rather than retry forever.
            return record(delivery, status: nil, error: nil, body: [], started: started,
                          next: .failed(reason: "the message's data is unreadable"), retryAfter: nil)
        }
        let request = WebhookRequest(delivery, data: data, now: clock())
        let post = FetchRequest.post(delivery.url, body: request.body, headers: request.headers, timeout: configuration.timeout,
                                     maxBodyBytes: configuration.maxResponseBytes, owner: Self.transferOwner)
        let id = fetcher.submit(post) { [weak self] result in
            guard let self else { return }
            inFlight[delivery.deliveryID] = nil
            switch result {
            case .success(let response):
                record(delivery, status: response.status, error: nil, body: response.body, started: started, next: nil,
                       retryAfter: response.headers.retryAfterDelay(now: clock() / 1000, limit: configuration.schedule.maxAge))
            case .failure(.shutdown), .failure(.cancelled):
                // Not an attempt: the process is stopping; the lease lets it be attempted again.
                break
            case .failure(let error):
                record(delivery, status: nil, error: error, body: [], started: started, next: nil, retryAfter: nil)
            }
            poll()
        }
        inFlight[delivery.deliveryID] = id
    }

    /// The message's `data` as JSON bytes: the pack document rendered from its snapshot, or the
    /// stored JSON.
    private func payload(of delivery: ClaimedWebhookDelivery) -> [UInt8]? {
        guard delivery.type.carriesPackDocument else { return Array(delivery.data.utf8) }
        return WebhookPackSnapshot.decode(delivery.data).flatMap(render)
    }

    private func record(_ delivery: ClaimedWebhookDelivery, status: Int?, error: FetchError?, body: [UInt8], started: ContinuousClock.Instant,
                        next decided: WebhookAttemptOutcome.Next?, retryAfter: Duration?) {
        let now = clock()
        let attemptNumber = delivery.attempts + 1
        let next = decided ?? WebhookAnswer(status: status, retryAfter: retryAfter)
            .next(for: delivery, attempt: attemptNumber, now: now, schedule: configuration.schedule,
                  unit: Double.random(in: 0..<1, using: &random))
        let duration = started.duration(to: .now)
        let attempt = WebhookAttemptRecord(
            at: now, durationMilliseconds: RetrySchedule.milliseconds(duration), status: status.map(Int64.init), error: error?.code,
            response: body.isEmpty ? nil : String(decoding: body.prefix(WebhookAttemptRecord.responseLimit), as: UTF8.self))
        let outcome = WebhookAttemptOutcome(deliveryID: delivery.deliveryID, attempt: attempt, next: next)
        let (owner, disableAfter) = (owner, RetrySchedule.milliseconds(configuration.disableAfter))
        riding({ database in
            try database.recordWebhookAttempt(outcome, owner: owner, now: now, disableAfter: disableAfter)
        }, then: { me, result in
            me.recorded(result, delivery, attempt: Attempt(delivery: delivery, status: status, error: error, next: next, duration: duration))
        })
    }

    private func recorded(_ result: Result<WebhookAttemptEffect, any Error>, _ delivery: ClaimedWebhookDelivery, attempt: Attempt) {
        switch result {
        case .failure(let failure):
            logger.warning("recording a webhook attempt failed (it will be attempted again)", metadata: [
                "delivery_id": "\(delivery.deliveryID)", "error": "\(failure)",
            ])
        case .success(let effect):
            if !effect.recorded {
                logger.notice("a webhook attempt finished after its delivery was removed or its lease passed to another node", metadata: [
                    "delivery_id": "\(delivery.deliveryID)",
                ])
            }
            if let endpoint = effect.disabledEndpoint {
                logger.warning("webhook endpoint disabled", metadata: [
                    "webhook_id": "\(endpoint)", "reason": "\(effect.disabledReason ?? "")",
                ])
            }
            logAttempt(delivery, status: attempt.status, error: attempt.error, next: attempt.next)
            onAttempt?(attempt)
        }
    }

    /// One structured line per attempt: ids, type, host (never the URL's path or query, which may
    /// carry a token), status or error, what follows.
    private func logAttempt(_ delivery: ClaimedWebhookDelivery, status: Int?, error: FetchError?, next: WebhookAttemptOutcome.Next) {
        var fields: Logger.Metadata = [
            "webhook_id": "\(delivery.endpointID)", "delivery_id": "\(delivery.deliveryID)", "event_id": "\(delivery.messageID)",
            "type": "\(delivery.type.rawValue)", "attempt": "\(delivery.attempts + 1)",
        ]
        if let status { fields["status"] = "\(status)" }
        if let error { fields["error"] = "\(error.code)" }
        switch next {
        case .delivered: fields["outcome"] = "\(WebhookDeliveryState.delivered.rawValue)"
        case .retry(let at): fields["outcome"] = "retry"; fields["next_attempt_at"] = "\(PreciseTimestamp(milliseconds: at))"
        case .failed: fields["outcome"] = "\(WebhookDeliveryState.failed.rawValue)"
        case .gone: fields["outcome"] = "gone"
        }
        logger.info("webhook attempt", metadata: fields)
    }
}
