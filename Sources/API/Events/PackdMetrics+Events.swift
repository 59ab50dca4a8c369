import Events

extension PackdMetrics {
    /// The instruments the event publisher reports to.
    public var events: EventMetrics {
        EventMetrics(subscribers: { [sseSubscribers] in sseSubscribers.set(Int64($0)) },
                     resourceDownloaded: { [downloadedResources] in downloadedResources.increment() },
                     retried: { [upstreamRetries] in upstreamRetries.increment() })
    }
}
