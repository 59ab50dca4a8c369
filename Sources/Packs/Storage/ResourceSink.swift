/// Where downloaded rows go: the store's one writer takes them in batches — by count or time, or
/// at `flush` — and commits each batch in ONE transaction, then reports what became durable
/// (`PackStore.commitListener`). Every method is safe from any thread and never blocks on disk.
///
/// Facts that belong to a batch — a failure record, an event, a pack's expected counts, a state
/// change the download caused — ride in it (`inBatch`): they are applied inside the open batch's
/// transaction, in submission order with the rows around them, and committed with it. They never
/// cut a batch short, so an upstream outage that fails a resource every few milliseconds still
/// leaves the writer committing full batches.
public protocol ResourceSink: AnyObject, Sendable {
    /// Rows to store, committed in submission order.
    func submit(_ writes: [ResourceWrite])
    /// Applies `operation` inside the open batch (a savepoint: if it throws, only its own changes
    /// are rolled back); `then` gets its result on the loop thread once the batch committed, or
    /// the batch's error if the batch was lost. `then` may be nil (fire and forget).
    func inBatch<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                              then: (@Sendable (Result<T, any Error>) -> Void)?)
    /// Calls `then` (on the loop thread) once everything submitted before is committed, in the
    /// batch it would have been committed in anyway (never cuts a batch: for backpressure).
    func whenCommitted(_ then: @escaping @Sendable () -> Void)
    /// Commits everything submitted before now, then calls `then` on the loop thread.
    func flush(_ then: @escaping @Sendable () -> Void)
    /// Appends `event` (numbered by the caller) to the durable event log in the open batch; it
    /// changes no pack document. `failed` hears, on any thread, if it could not be stored.
    func logEvent(_ event: StoredEvent, failed: @escaping @Sendable (any Error) -> Void)
    /// Rows submitted and not yet taken into a batch (producer backpressure).
    var pendingWrites: Int { get }
}

/// The reads of a store: packs, their versions, stored resources and webhooks.
public typealias StoreReading = PackRepository & ResourceIndex & PackVersionRepository & WebhookRepository
/// The writes of a store's one writer (which may read in the same transaction).
public typealias StoreWriting = MutablePackRepository & MutableResourceIndex & PackImporting & MutableWebhookRepository
