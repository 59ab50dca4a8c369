/// The packs a store holds, read (GRDB's reader role): their rows, progress, failures, the event
/// log, idempotency keys and the storage figures the API reports. Every method runs on a thread
/// that may block — a `PackStore` calls them only inside `read` or `write`, never on the loop.
///
/// Contract (the store contract suite checks it for every implementation): reads see only
/// committed data — progress never counts a row that is not durable; lists are in creation (id)
/// order; ids never repeat, across restarts and, in cluster mode, across nodes.
public protocol PackRepository: AnyObject {
    /// The pack, nil when there is no such pack.
    func pack(_ id: Int64) throws -> PackRecord?
    /// Packs with ids above `after` in creation order, optionally of one state and whose name
    /// contains `nameContains` (ASCII case ignored, literal: no wildcards); at most `limit` (≤ 500).
    func packs(after: Int64, state: PackState?, nameContains: String?, limit: Int) throws -> [PackRecord]
    /// The pack's durable counts, nil when there is no such pack.
    func progress(_ id: Int64) throws -> StoredProgress?
    /// The pack's failed resources, newest first, at most `limit` (≤ 1000).
    func failures(packID: Int64, limit: Int) throws -> [ResourceFailure]
    func idempotencyEntry(_ key: String) throws -> IdempotencyEntry?
    func packCount() throws -> Int64
    func packCountsByState() throws -> [PackState: Int]
    /// Packs a (re)starting server must continue: `active` ones first (they were running), then
    /// `queued`, each in creation order. All of them or an error — a partial list strands the rest.
    func scheduledPackIDs() throws -> [Int64]

    /// Events with ids above `after` (all packs, or one), oldest first, at most `limit`.
    func events(after: Int64, packID: Int64?, limit: Int) throws -> [StoredEvent]
    /// The oldest event id still held (replay from before it is impossible), nil when empty.
    func oldestEventID() throws -> Int64?
    /// The largest event id ever handed out (0 for a new store); deleted events keep theirs.
    func lastEventID() throws -> Int64

    /// The most tiles all packs together may hold, nil when unlimited.
    func tileLimit() throws -> Int64?
    /// Distinct tiles linked to any pack.
    func linkedTileCount() throws -> Int64
    /// Bytes of every stored body, packs and ambient cache.
    func storedBytes() throws -> Int64
    /// Bytes the ambient cache holds (rows no pack links), and its configured maximum.
    func ambientCache() throws -> (size: Int64, maximumSize: Int64)

    /// Packs whose scheduled refresh is due at `now`, earliest first, at most `limit`.
    func dueRefreshes(now: Int64, limit: Int) throws -> [DueRefresh]
    /// When the earliest scheduled refresh is due, nil when no pack has one.
    func earliestRefresh() throws -> Int64?
}

/// A pack whose scheduled refresh is due.
public struct DueRefresh: Sendable, Equatable {
    public var packID: Int64
    /// The interval (`PackRecord.refreshEvery`).
    public var every: String
    /// The due time as stored: `claimRefresh` moves it only if it is still this.
    public var due: Int64

    public init(packID: Int64, every: String, due: Int64) {
        self.packID = packID
        self.every = every
        self.due = due
    }
}

/// Changes to packs, applied by the store's one writer (GRDB's writer role). Each method is one
/// transaction (a savepoint inside a batch); a method that throws leaves nothing of it behind.
public protocol MutablePackRepository: PackRepository {
    /// Creates the pack (its MapLibre region, its row, a zero progress row) in `record.state`,
    /// which `PackLifecycle` allows for a new pack; returns its id.
    func createPack(_ record: PackRecord, now: Int64) throws -> Int64
    /// Applies `event` to the pack's stored state by `PackLifecycle`'s rules and performs the
    /// transition's storage actions (clear failures, restart a revalidation, store expected
    /// counts, remove rows) in the same transaction. `.noSuchPack` and `.refused` change nothing.
    func transition(_ packID: Int64, _ event: PackLifecycle.Event, now: Int64) throws -> TransitionOutcome
    /// Replaces name and/or context (`.some(nil)` clears the context); false when there is no such pack.
    @discardableResult
    func updatePack(_ packID: Int64, name: String?, context: [UInt8]??, now: Int64) throws -> Bool
    /// The result of a `check-update`.
    func setUpdateAvailable(_ packID: Int64, _ available: Bool, now: Int64) throws
    /// Sets (`every` and `next`) or clears (both nil) the pack's scheduled refresh; false when
    /// there is no such pack.
    @discardableResult
    func setRefresh(_ packID: Int64, every: String?, next: Int64?, now: Int64) throws -> Bool
    /// Claims a due refresh, exactly once however many nodes try: moves the pack's due time from
    /// `due` to `next`, and if the pack is `complete` applies `invalidate` — in one transaction.
    /// nil when the due time is no longer `due` (claimed meanwhile, or changed); otherwise the
    /// transition's outcome (`.refused` for a pack not complete: this round is skipped).
    func claimRefresh(_ packID: Int64, due: Int64, next: Int64, now: Int64) throws -> TransitionOutcome?
    /// Records the glyph ranges a `"glyphs": "region"` pack left out (each choice replaces the last).
    func recordSkippedGlyphRanges(_ packID: Int64, _ skipped: SkippedGlyphRanges, now: Int64) throws
    /// Records that the pack's start area is stored, unless that was recorded before; true when
    /// this call recorded it (the `start_area_ready` event is published once).
    func recordStartAreaReady(_ packID: Int64, at time: Int64) throws -> Bool
    /// Records a resource that failed for good and counts it; keeps the latest 1,000 per pack.
    func recordFailure(packID: Int64, url: String, status: Int64?, message: String, attempts: Int64, now: Int64) throws
    /// Forgets the pack's failures (a run retries them).
    func clearFailures(packID: Int64) throws
    /// Adds range requests made to PMTiles archives, and the bytes they brought, to the pack's
    /// `archive_requests` and `archive_bytes` (nothing when there is no such pack).
    func addArchiveTraffic(packID: Int64, requests: Int64, bytes: Int64) throws
    /// Zeroes the revalidation counts and starts them at `now` (a revalidation resumed after a
    /// suspend or a restart starts over: what it already refreshed then answers 304).
    func restartInvalidation(_ packID: Int64, now: Int64) throws
    /// Stores a revalidation's running counts (and `completedAt` when it ended); the counts as
    /// committed with the pack's progress, nil when the pack is gone.
    func recordInvalidation(_ packID: Int64, unchanged: Int64, updated: Int64, removed: Int64,
                            completedAt: Int64?) throws -> (PackInvalidation, StoredProgress)?
    /// Appends an event; `id` is the id the caller handed out (monotonic), or nil to let the
    /// store choose the next. Returns the stored id. Keeps the latest 10,000.
    @discardableResult
    func appendEvent(id: Int64?, packID: Int64?, type: String, json: String, now: Int64) throws -> Int64
    /// Stores the answer to an idempotent request (the first one for a key wins); entries older
    /// than `retention` seconds go.
    func storeIdempotencyKey(_ key: String, requestHash: String, packID: Int64?, status: Int64, body: [UInt8],
                             now: Int64, retention: Int64) throws
    func setTileLimit(_ limit: Int64?) throws
    func setMaximumAmbientCacheSize(_ size: Int64) throws
    func clearAmbientCache() throws
    /// Marks every ambient row stale (revalidated on next use).
    func invalidateAmbientCache() throws
    /// Every pack, every stored row, events and idempotency keys gone; settings stay.
    func reset() throws
}

/// What `MutablePackRepository.transition` did.
public enum TransitionOutcome: Sendable, Equatable {
    /// Applied and committed with the write; the loop side performs `transition.loopActions`.
    case applied(PackLifecycle.Transition)
    /// The lifecycle refused the event in the pack's current state; nothing changed.
    case refused(PackLifecycle.Refusal)
    case noSuchPack
}
