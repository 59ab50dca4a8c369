/// **engine → activity** (see `CommittedBatchListener` for the whole flow): what the download
/// engine tells the rest of packd — the API's events and `/metrics` — once it is durable:
/// transitions committed, progress committed, revalidation counts committed, and each failed
/// request. One typed listener instead of a closure per fact, given to the engine when it is
/// made (the API's `PackEventPublisher`; Jobs does not import the API). Called on the loop thread.
public protocol PackActivityListener: AnyObject {
    /// A transition the engine made is committed; the listener performs its events.
    func packTransitioned(_ packID: Int64, _ transition: PackLifecycle.Transition)
    /// Progress as committed, with the pack's expected counts when its job knows them (nil when
    /// the commit landed after its job stopped).
    func progressCommitted(_ packID: Int64, _ progress: StoredProgress, expected: ExpectedCounts?)
    /// A revalidation's committed counts, with the pack's progress and expected counts.
    func revalidationCommitted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress,
                               expected: ExpectedCounts)
    /// One failed request of a download (`url` without credentials).
    func resourceFailed(_ failure: ResourceErrorEvent)
    /// Every tile of the pack's start area is durably stored (recorded once, at `time`).
    func startAreaReady(_ packID: Int64, _ startArea: StartArea, at time: Int64)
    /// A resource was downloaded and handed to the writer (a body, or a tile's "no content").
    func resourceDownloaded()
    /// A request is tried again after a transient failure.
    func retried()
}

extension PackActivityListener {
    public func resourceDownloaded() {}
    public func retried() {}
}
