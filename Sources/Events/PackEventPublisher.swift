import Foundation
import Logging
import Loop
import Packs

/// What the events say about packs, and the one place they are published from: the API's own
/// state changes (creation, suspend/resume, DELETE, imports, a reset) and what the download
/// engine committed (`PackActivityListener`: transitions, progress, revalidation counts,
/// failures). A `progress` event merges the store's committed counts, the expected counts the
/// engine knows, the pack's rolling rate (`ProgressRates`) and what the fetcher does for it
/// (`transfers`), in the shape `GET /v1/packs/{id}` shows.
///
/// The events go to `streams` (coalescing, replay, subscribers), whose `EventDelivery` strategy
/// numbers them and makes them durable: `LocalEventDelivery` on one node,
/// `StoreNumberedEventDelivery` in cluster mode, where every node's events come back through
/// `eventsCommitted` (`StoredEventListener`, fed by `NOTIFY`). Loop thread only.
public final class PackEventPublisher: PackActivityListener, StoredEventListener {
    /// The event streams: `GET /v1/events` and `GET /v1/packs/{id}/events` subscribe here.
    public let streams: EventBroadcaster
    /// The durable log behind `streams` (and its backlog of appends a full disk refused).
    public let log: EventLog
    let store: any PackStore
    let logger: Logger
    /// Told when what a pack's document shows changes without a store write — its rate, its
    /// transfers, a state this node published — so a cache of rendered documents (the API's
    /// `PackDocumentCache`) drops its entry.
    public var documentChangeObservers: [(Int64) -> Void] = []
    private let metrics: EventMetrics
    /// What the fetcher is doing for each pack it holds transfers or a throttle for
    /// (`transfers_in_flight`, `throttled`). nil: every pack is idle (no downloads here).
    let transferStatuses: (() -> [Int64: PackTransferStatus])?
    private var transferWatch: LoopTimer?
    /// Told of every removed pack, this node's or (cluster mode) another's: offline serving's
    /// caches, the artifacts.
    public var removalObservers: [(Int64) -> Void] = []
    /// Told of each transition the download engine committed, after its events (webhook
    /// deliveries committed with it wake their dispatcher).
    public var engineTransitionObservers: [(PackLifecycle.Transition) -> Void] = []

    /// Rolling rates of committed progress, for `bytes_per_second` and `eta_seconds`.
    private var rates = ProgressRates()
    /// Monotonic seconds for the rates; tests set a clock of their own.
    var seconds: () -> Double = { MonotonicClock.seconds }
    /// What the events last said of each pack. Writes already in flight when a pack is
    /// suspended commit after its `state` event: their `progress` event then names the state the
    /// pack is in and keeps its expected counts (the engine no longer knows them), and one
    /// that commits after a delete is not published at all. One small entry per pack seen since start.
    private var published: [Int64: PublishedPack] = [:]

    private struct PublishedPack {
        var state = PackState.active
        var expected: ExpectedCounts?
        var removed = false
        /// The last committed progress an event carried, for a `progress` event when only the
        /// transfers changed.
        var progress: StoredProgress?
        var transfers = PackTransferStatus.idle
    }

    /// How often a change of what holds a pack's transfers back becomes a `progress` event when
    /// nothing commits (a host pausing the pack with `Retry-After`).
    static let transferWatchInterval: UInt64 = 500

    /// Loop thread. Event ids continue after the largest one the store's log ever handed out;
    /// `numbering` picks the delivery strategy. `transfers` (the fetcher's, wired by `packd`)
    /// adds `transfers_in_flight` and `throttled` to documents and events, and a watch that
    /// publishes their changes when nothing commits.
    public init(store: any PackStore, loop: EventLoop, numbering: EventNumbering = .local,
                configuration: EventBroadcaster.Configuration = .init(), metrics: EventMetrics = .none, transfers: (() -> [Int64: PackTransferStatus])? = nil, clock: WallClock = .system,
                logger: Logger = Logger(label: "packd.api")) throws {
        self.store = store
        self.logger = logger
        self.metrics = metrics
        transferStatuses = transfers
        let lastEventID = try store.readNow { try $0.lastEventID() }
        log = EventLog(store: store, loop: loop, clock: clock, logger: logger)
        let delivery: any EventDelivery = switch numbering {
        case .local: LocalEventDelivery(log: log)
        case .store: StoreNumberedEventDelivery(log: log)
        }
        streams = EventBroadcaster(loop: loop, lastEventID: lastEventID, configuration: configuration, delivery: delivery)
        streams.onSubscriberCountChange = { metrics.subscribers($0) }
        if transfers != nil {
            let timer = LoopTimer(loop: loop)
            timer.unref()
            timer.start(after: Self.transferWatchInterval, repeat: Self.transferWatchInterval) { [weak self] in
                self?.publishTransferChanges()
            }
            transferWatch = timer
        }
    }

    /// Ends the event streams and the log's retries (before the server's shutdown grace period runs out).
    public func close() {
        transferWatch?.close()
        transferWatch = nil
        streams.close()
        log.close()
    }

    // MARK: What the routes show

    /// The pack's rolling rate now (nil while unknown).
    public func rate(of packID: Int64) -> RollingRate? { rates.rate(packID: packID, now: seconds()) }

    /// Every known rate now, for a list read off the loop.
    public func allRates() -> [Int64: RollingRate] { rates.rates(now: seconds()) }

    /// What the fetcher does for each pack now.
    public func transfers() -> [Int64: PackTransferStatus] { transferStatuses?() ?? [:] }

    // MARK: The API's own changes

    /// The events of a committed transition, whoever made it (a route, or the engine).
    public func publish(_ transition: PackLifecycle.Transition, packID: Int64) {
        for action in transition.loopActions {
            switch action {
            case .publishState:
                if let state = transition.to { publishState(packID, state: state, previous: transition.from, error: transition.error) }
            case .publishTileLimitExceeded: publishTileLimitExceeded(packID)
            case .publishRemoved: packRemoved(packID)
            default: break
            }
        }
        // The versions its completion cut: this pack's, and those of packs sharing rows it changed.
        publishVersions(transition.createdVersions)
    }

    /// A `version_created` event (and a log line) per version cut, by a completion or an import.
    public func publishVersions(_ versions: [PackVersion]) {
        for version in versions {
            documentChanged(version.packID)
            streams.publish(.versionCreated(VersionCreatedEvent(packID: version.packID, version: PackVersionSummary(version))))
            logger.info("pack version created", metadata: ["pack_id": "\(version.packID)", "version": "\(version.version)",
                                                           "changed_resources": "\(version.changedResources)",
                                                           "removed_resources": "\(version.removedResources)"])
        }
    }

    /// A `state` event: never coalesced; the delivery makes it durable. `previous` is nil for a
    /// pack just created.
    public func publishState(_ packID: Int64, state: PackState, previous: PackState?, error: PackError? = nil) {
        // A rate describes one stretch of downloading; the next starts afresh.
        if state != .active { rates.forget(packID: packID) }
        published[packID, default: PublishedPack()].state = state
        documentChanged(packID)
        streams.publish(.state(StateEvent(packID: packID, state: state, previousState: previous, error: error)))
        var fields: Logger.Metadata = ["pack_id": "\(packID)", "to": "\(state.rawValue)"]
        if let previous { fields["from"] = "\(previous.rawValue)" }
        if let error { fields["error_code"] = "\(error.code.rawValue)" }
        logger.info("pack state changed", metadata: fields)
    }

    /// `pack_removed` for a pack this node removed (a DELETE, a storage reset), and the caches
    /// that held it forget it.
    public func packRemoved(_ packID: Int64) {
        forget(packID)
        streams.publish(.packRemoved(PackRemovedEvent(packID: packID)))
    }

    private func forget(_ packID: Int64) {
        rates.forget(packID: packID)
        published[packID] = PublishedPack(removed: true)
        documentChanged(packID)
        for observer in removalObservers { observer(packID) }
    }

    /// What an import added (a `state` event, as for a created pack) or changed, each with a
    /// `progress` event of what it now holds, so a dashboard on `/v1/events` sees them.
    public func packsImported(_ changed: [ImportedPack]) {
        for pack in changed {
            if pack.added {
                publishState(pack.record.id, state: pack.record.state, previous: nil)
            } else {
                // The event carries the state the pack has, not what this server last published.
                published[pack.record.id, default: PublishedPack()].state = pack.record.state
            }
            progressCommitted(pack.record.id, pack.progress, expected: pack.record.expected)
        }
    }

    // MARK: PackActivityListener (the download engine's committed facts)

    public func packTransitioned(_ packID: Int64, _ transition: PackLifecycle.Transition) {
        publish(transition, packID: packID)
        for observer in engineTransitionObservers { observer(transition) }
    }

    /// Publishes committed progress in the same `progress` shape `GET /v1/packs/{id}` returns, so
    /// an event and a poll never disagree on fields. `expected` resources are 0 and `precise`
    /// false while the plan is not known yet, as in the pack document. The commit also feeds the
    /// pack's rolling rate, which the event and later polls carry. `expected` is nil when the
    /// engine no longer knows it (a commit that lands after its download stopped): the last
    /// published counts are kept.
    public func progressCommitted(_ packID: Int64, _ progress: StoredProgress, expected: ExpectedCounts?) {
        var pack = published[packID, default: PublishedPack()]
        guard !pack.removed else { return }
        if let expected { pack.expected = expected }
        pack.progress = progress
        pack.transfers = transferStatuses?()[packID] ?? .idle
        published[packID] = pack
        rates.record(packID: packID, progress: progress, now: seconds())
        // The commit already moved the store's tag; the new rate moves the local one.
        documentChanged(packID)
        publishProgressEvent(packID, pack)
    }

    /// A `progress` event with the revalidation's committed counts (openapi's `ProgressEvent.invalidation`).
    public func revalidationCommitted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress,
                                      expected: ExpectedCounts) {
        streams.publish(.progress(ProgressEvent(
            packID: packID, state: .active, progress: PackProgress(progress, expected: expected),
            invalidation: InvalidationResult(counts))))
    }

    /// A `resource_error` event: one failed request of a download (`url` is the canonical URL,
    /// without an upstream rule's credentials). Dropped once the pack is removed.
    public func resourceFailed(_ failure: ResourceErrorEvent) {
        guard published[failure.packID]?.removed != true else { return }
        streams.publish(.resourceError(failure))
    }

    /// A `start_area_ready` event: the pack's start area is stored (recorded once). Dropped once
    /// the pack is removed.
    public func startAreaReady(_ packID: Int64, _ startArea: StartArea, at time: Int64) {
        guard published[packID]?.removed != true else { return }
        streams.publish(.startAreaReady(StartAreaReadyEvent(packID: packID, startArea: startArea, readyAt: Timestamp(time))))
    }

    public func resourceDownloaded() {
        metrics.resourceDownloaded()
    }

    public func retried() {
        metrics.retried()
    }

    // MARK: StoredEventListener (cluster mode: every node's events, numbered by the store)

    /// Delivers the events any node committed to this node's streams, after learning from them
    /// the state each pack is in (which this node's own progress events and rates go by) and the
    /// packs another node removed (offline serving forgets them at once, as for a DELETE here).
    public func eventsCommitted(_ stored: [StoredEvent]) {
        let events = EventLog.packEvents(stored)
        for event in events {
            switch event.kind {
            case .state:
                guard let state = try? JSONDecoder().decode(StateEvent.self, from: Data(event.payload)),
                      published[event.packID]?.removed != true else { continue }
                if state.state != .active { rates.forget(packID: event.packID) }
                published[event.packID, default: PublishedPack()].state = state.state
            case .packRemoved:
                guard published[event.packID]?.removed != true else { continue }
                forget(event.packID)
            default:
                break
            }
        }
        streams.deliverStored(events)
    }

    // MARK: Progress events

    /// The `progress` event of what `pack` holds; as in the pack document, a rate and transfers
    /// only while the pack is downloading.
    private func publishProgressEvent(_ packID: Int64, _ pack: PublishedPack) {
        guard let progress = pack.progress else { return }
        let active = pack.state == .active
        let rate = active ? rates.rate(packID: packID, now: seconds()) : nil
        let expected = pack.expected ?? ExpectedCounts(resources: 0, tiles: 0, precise: false)
        streams.publish(.progress(ProgressEvent(packID: packID, state: pack.state,
                                                progress: PackProgress(progress, expected: expected, rate: rate,
                                                                       transfers: active ? pack.transfers : nil))))
    }

    /// A `progress` event for a pack nothing was committed for since start: with what the store
    /// holds (a resumed pack is not at zero).
    private func publishStoredProgress(_ packID: Int64) {
        store.read({ reader in try reader.progress(packID) }) { [self] result in
            guard case .success(let progress?) = result, var pack = published[packID], !pack.removed else { return }
            // A commit published meanwhile carries newer counts and the transfers already.
            guard pack.progress == nil else { return }
            pack.progress = progress
            published[packID] = pack
            publishProgressEvent(packID, pack)
        }
    }

    /// Publishes a `progress` event for each downloading pack whose upstreams started or stopped
    /// holding it back (or whose transfers all stopped or resumed) since its last event: a host
    /// pausing the pack with `Retry-After` stops its commits, so no commit would tell. Called
    /// every `transferWatchInterval`.
    func publishTransferChanges() {
        guard let transferStatuses else { return }
        let statuses = transferStatuses()
        for (packID, pack) in published where pack.state == .active && !pack.removed {
            let now = statuses[packID] ?? .idle
            let before = pack.transfers
            guard now.throttled != before.throttled || (now.transfersInFlight == 0) != (before.transfersInFlight == 0) else {
                continue
            }
            published[packID]?.transfers = now
            // A poll's document shows the change too, not one cached before it.
            documentChanged(packID)
            if pack.progress != nil {
                publishProgressEvent(packID, published[packID] ?? pack)
            } else {
                publishStoredProgress(packID)
            }
        }
    }

    /// The `tile_limit_exceeded` event after the state event that failed the pack: the pack's own
    /// `limits.max_tiles` with the tiles its region needs when that is what stopped it, else the
    /// server's tile limit with the tiles all packs hold.
    private func publishTileLimitExceeded(_ packID: Int64) {
        store.read({ reader -> (count: Int64, maximum: Int64)? in
            guard let record = try reader.pack(packID) else { return nil }
            if let maxTiles = record.maxTiles, record.expectedTiles > maxTiles {
                return (record.expectedTiles, maxTiles)
            }
            guard let limit = try reader.tileLimit() else { return nil }
            return (try reader.linkedTileCount(), limit)
        }) { [self] result in
            switch result {
            case .failure(let error):
                logger.warning("reading the tile limit for a pack's event failed", metadata: ["pack_id": "\(packID)", "error": "\(error)"])
            case .success(nil):
                break
            case .success(let numbers?):
                guard published[packID]?.removed != true else { return }
                streams.publish(.tileLimitExceeded(TileLimitExceededEvent(packID: packID, count: numbers.count,
                                                                          maximum: numbers.maximum)))
            }
        }
    }

    private func documentChanged(_ packID: Int64) {
        for observer in documentChangeObservers { observer(packID) }
    }
}
