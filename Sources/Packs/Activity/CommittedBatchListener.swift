/// The first hop of what packd does with a tile, named as types so that a reader follows it
/// without searching for assignments:
///
/// 1. libcurl finishes a transfer (`Fetch.Fetcher`); the download engine (`Jobs.PackDownload`,
///    under `Jobs.PackScheduler` or `Cluster.ClusterScheduler`) hands the body to its store as a
///    `ResourceWrite` (`ResourceSink.submit`).
/// 2. **commit → engine**: the store's writer commits the batch and the store tells its
///    `CommittedBatchListener` — the engine, which registered itself when it was made with the
///    store — what became durable (`BatchOutcome`), on the loop thread.
/// 3. **engine → activity**: the engine tells its `PackActivityListener` (given to it when it was
///    made) the committed facts: progress with the expected counts it knows, transitions, failures.
/// 4. The API's `PackEventPublisher` is that listener: it merges the facts into `progress` and
///    `state` events, which its delivery strategy numbers and hands to the SSE streams — at once
///    on one node, or (cluster mode) once the store numbered them and `NOTIFY` brought them back
///    to every node (`StoredEventListener`).
///
/// The engine is the store's one listener; it is held weakly (the engine holds the store).
/// Called on the loop thread, in commit order.
public protocol CommittedBatchListener: AnyObject {
    /// What one committed (or rolled back) batch made durable.
    func committed(_ outcome: BatchOutcome)
}
