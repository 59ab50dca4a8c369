import Jobs
import Packs

/// The download engine's committed facts become events (and `/metrics` counts): the API listens
/// to Jobs' scheduler directly. Loop thread.
extension PackdAPI: PackActivityListener {
    public func packTransitioned(_ packID: Int64, _ transition: PackLifecycle.Transition) {
        packs.publish(transition, packID: packID)
        // Its webhook deliveries committed with it: they go out now rather than at the next poll.
        if !WebhookTrigger.types(of: transition).isEmpty { webhooks.wake?() }
    }

    public func progressCommitted(_ packID: Int64, _ progress: StoredProgress, expected: ExpectedCounts?) {
        packs.publishProgress(packID, progress: progress, expected: expected)
    }

    public func revalidationCommitted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress,
                                      expected: ExpectedCounts) {
        maintenance.publishInvalidation(packID, counts, progress: progress, expected: expected)
    }

    public func startAreaReady(_ packID: Int64, _ startArea: StartArea, at time: Int64) {
        packs.publishStartAreaReady(StartAreaReadyEvent(packID: packID, startArea: startArea, readyAt: Timestamp(time)))
    }

    public func resourceFailed(_ failure: ResourceErrorEvent) {
        packs.publishResourceError(failure)
    }

    public func resourceDownloaded() {
        routes.metrics.downloadedResources.increment()
    }

    public func retried() {
        routes.metrics.upstreamRetries.increment()
    }
}
