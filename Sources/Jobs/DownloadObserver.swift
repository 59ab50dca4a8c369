/// What downloads report as they go, for counters outside Jobs (`/metrics`): packd wires these
/// to its metrics, Jobs does not know of them. Called on the loop thread.
public struct DownloadObserver {
    /// A resource was downloaded and handed to the writer (a body, or a tile's "no content").
    public var resourceDownloaded: () -> Void
    /// A resource is tried again after a transient failure.
    public var retried: () -> Void

    public init(resourceDownloaded: @escaping () -> Void = {}, retried: @escaping () -> Void = {}) {
        self.resourceDownloaded = resourceDownloaded
        self.retried = retried
    }
}
