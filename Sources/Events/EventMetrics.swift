/// What the event publisher counts for `/metrics`: `packd_sse_subscribers` and the download
/// counters the engine reports through it. The API's `PackdMetrics` gives its instruments
/// (`PackdMetrics.events`); tests take `none`. Called on the loop thread.
public struct EventMetrics: Sendable {
    /// The number of open event streams, whenever it changes.
    public var subscribers: @Sendable (Int) -> Void
    /// One resource downloaded and stored.
    public var resourceDownloaded: @Sendable () -> Void
    /// One upstream request retried.
    public var retried: @Sendable () -> Void

    public init(subscribers: @escaping @Sendable (Int) -> Void, resourceDownloaded: @escaping @Sendable () -> Void,
                retried: @escaping @Sendable () -> Void) {
        self.subscribers = subscribers
        self.resourceDownloaded = resourceDownloaded
        self.retried = retried
    }

    /// Counts nothing.
    public static let none = EventMetrics(subscribers: { _ in }, resourceDownloaded: {}, retried: {})
}
